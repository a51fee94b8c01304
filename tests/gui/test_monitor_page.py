"""The Monitor page against a real daemon and the real llama-server: its charts receive
points while a chat streams through the gateway, Pause holds them, a new window loads
history. Then the widgets alone, with made-up figures: the flags' words and colours, the
buffer, the stacked VRAM chart and its note."""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
import qasync
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import StartRequest
from roundhouse.api.metrics import InstanceMetrics, InstanceSeries, MetricsHistory, MetricsSnapshot
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.monitor_page import MonitorPage
from roundhouse.gui.widgets.chart_card import ChartCard
from roundhouse.gui.widgets.monitor_buffer import MetricsBuffer, label_of
from roundhouse.gui.widgets.monitor_charts import NO_GPU_VRAM, NO_VRAM, MonitorCharts, curve_data
from roundhouse.gui.widgets.monitor_flags import LEVEL_COLOURS, Level, MonitorFlags
from roundhouse.gui.widgets.sample_buffer import SampleBuffer
from tests.daemon_process import DaemonProcess, start_ready
from tests.gui.conftest import close_bridge, wait_until

READY_S = 60.0
GIB = 1024**3


async def _chat(daemon: DaemonProcess, model: str, max_tokens: int) -> int:
    """Stream one chat through the gateway; how many chunks came."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Count."}],
        "max_tokens": max_tokens,
        "stream": True,
    }
    chunks = 0
    async with (
        httpx.AsyncClient(base_url=daemon.url, timeout=60) as http,
        http.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            chunks += line.startswith("data: {")
    return chunks


def test_charts_receive_points_while_a_chat_streams(
    ui: Ui, qloop: qasync.QEventLoop, llama_daemon: DaemonProcess, tiny_gguf: Path
) -> None:
    async def scenario() -> None:
        # One engine thread: on its default of one per core it starves the app's loop here.
        options = InstanceOptions(
            model=str(tiny_gguf), ctx_size=512, parallel=1, threads=1, extra_args=("--ignore-eos",)
        )
        request = StartRequest(engine=EngineId.LLAMA_CPP, options=options)
        info = await start_ready(llama_daemon, request, READY_S)
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        page = ui.window.show_page(MonitorPage.title)
        assert isinstance(page, MonitorPage)
        await wait_until(lambda: page.following and page.history_loads >= 1, 10, "following")
        await wait_until(lambda: info.id in page.buffer.instances(), 10, "the instance")
        # Engines of other test runs on this machine may show up too (found by the scan).
        await wait_until(lambda: page.flags.row_of(info.id) is not None, 5, "the instance's row")
        # The history names an instance by its id; the first live tick adds its model.
        label = page.buffer.labels[info.id]
        row = page.flags.row_of(info.id)
        assert row is not None
        assert info.id in label and label == page.flags.cell(row, 0).text()

        tps, flight = page.charts.tps_chart, page.charts.flight_chart

        def moved() -> bool:
            return bool(np.nanmax(curve_data(tps, label), initial=0) > 0) and bool(
                np.nanmax(curve_data(flight, label), initial=0) >= 1
            )

        # The tiny model writes 400-1600 tokens/s here: one chat may begin and end between
        # two of the daemon's ticks. Chats back to back, two at a time, leave no such gap.
        chunks: list[int] = []

        async def chat_until_moved() -> None:
            while not moved():
                chats = (_chat(llama_daemon, info.models[0], 200) for _ in "ab")
                chunks.extend(await asyncio.gather(*chats))

        try:
            await asyncio.wait_for(chat_until_moved(), 40)
        except TimeoutError:
            pytest.fail(f"tokens/s and requests in flight did not move in 40 s ({chunks})")
        assert chunks and all(count > 0 for count in chunks), chunks
        await wait_until(lambda: curve_data(flight, label)[-1] == 0, 10, "the requests to end")
        assert "tok/s" in tps.value_label.text()
        # No GPU here: bandwidth use is unknown (why in the tooltip), no fallback is flagged,
        # and both columns are hidden, as they say nothing without a GPU.
        assert page.flags.cell(row, 2).text() in {"unknown", "— (idle)"}
        assert page.flags.cell(row, 3).text() == "none seen"
        assert ui.bridge.inventory is not None
        no_gpu = not ui.bridge.inventory.gpus
        assert page.flags.table.isColumnHidden(2) is no_gpu
        assert page.flags.table.isColumnHidden(3) is no_gpu
        # Which rate is which: the gateway's, the engine's, each with its explanation.
        headings = [page.flags.table.horizontalHeaderItem(c) for c in (1, 4)]
        assert [h.text() for h in headings if h] == ["Gateway tok/s", "Engine tok/s"]
        assert all(h is not None and "engine" in h.toolTip() for h in headings)
        assert "Engine tok/s" in page.flags.caption.text() and page.flags.caption.isVisible()
        # Every axis names its unit; the tiny model's RAM is tens of MiB, so MiB.
        charts = page.charts
        units = {
            chart.title_label.text(): _axis_label(chart, "left")
            for chart in (charts.tps_chart, charts.flight_chart, charts.cpu_chart)
        }
        assert units == {
            "Gateway tokens/s (output, all requests)": "tokens/s",
            "Requests in flight (running + queued)": "requests",
            "CPU (% of one core)": "% of one core",
        }
        assert _axis_label(charts.ram_chart, "left") == "MiB"
        assert 1 < np.nanmax(curve_data(charts.ram_chart, label)) < 1024
        assert charts.ram_chart.value_label.text().endswith(" MiB")
        assert _axis_label(charts.tps_chart, "bottom") == "local time"

        # Pause: ticks keep arriving, the charts hold still; Resume draws them again.
        page.pause_button.click()
        assert page.paused and page.pause_button.text() == "Resume"
        drawn, received = tps.point_count(), page.buffer.revision
        await asyncio.sleep(2.5)
        assert page.buffer.revision > received, "still receiving"
        assert tps.point_count() == drawn, "the chart held still"
        page.pause_button.click()
        await wait_until(lambda: tps.point_count() > drawn, 5, "the chart to move again")

        # A shorter window: its history is fetched, and the chat's figures are in it.
        loads = page.history_loads
        page.window_box.setCurrentIndex(0)
        assert page.buffer.window_s == 60
        await wait_until(lambda: page.history_loads > loads, 10, "the window's history")
        assert page.history_call is not None and page.history_call.result.window_s == 60

        def span_s() -> float:
            low, high = tps.plot.getPlotItem().getViewBox().viewRange()[0]
            return float(high - low)

        await wait_until(lambda: math.isclose(span_s(), 60, abs_tol=1), 5, "a 1 min chart")
        assert np.nanmax(curve_data(tps, label)) > 0

        # Hidden, the page stops following; shown again, it follows and reloads.
        ui.window.show_page("Hardware")
        await wait_until(lambda: not page.following, 5, "the stream to close")
        ui.window.show_page(MonitorPage.title)
        await wait_until(lambda: page.following, 5, "following again")

    try:
        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, ui.bridge)


def _axis_label(chart: ChartCard, side: str) -> str:
    """The words an axis shows beside its numbers ('' when it shows none)."""
    axis = chart.plot.getPlotItem().getAxis(side)
    return str(axis.labelText) if axis.label.isVisible() else ""


# -- the widgets alone, with made-up figures ----------------------------------------------


def _point(instance: str, **figures: object) -> InstanceMetrics:
    return InstanceMetrics.model_validate(
        {"instance": instance, "engine": "llama.cpp", "model": "m", "t": 1.0, **figures}
    )


def _colour(flags: MonitorFlags, row: int, column: int) -> str | None:
    brush = flags.cell(row, column).data(Qt.ItemDataRole.ForegroundRole)
    return None if brush is None else QColor(brush.color()).name()


def test_flags_words_and_colours(qapp: QApplication) -> None:
    flags = MonitorFlags()
    points = [
        _point("fast", output_tps=50, bandwidth_use=0.72, bandwidth_note="72% of H100's peak"),
        _point(
            "slow",
            output_tps=9,
            bandwidth_use=0.25,
            bandwidth_low=True,
            bandwidth_note="25% of H100's peak (low)",
        ),
        _point("unsure", bandwidth_note="peak bandwidth of Odd GPU unknown"),
        _point("cpu", cpu_fallback="only 3 of the 33 layers asked for went to the GPU"),
    ]
    # Until the inventory names a GPU, bandwidth use and CPU fallback are hidden.
    assert flags.table.isColumnHidden(2) and flags.table.isColumnHidden(3)
    flags.set_gpu_present(True)
    assert not flags.table.isColumnHidden(2) and not flags.table.isColumnHidden(3)
    flags.show_points(points)
    text = [[flags.cell(r, c).text() for c in range(4)] for r in range(4)]
    assert text[0] == ["m (fast)", "50.0", "72%", "none seen"]
    assert flags.row_of("cpu") == 3 and flags.row_of("none") is None
    assert _colour(flags, 0, 2) is None, "a healthy share keeps the palette's colour"
    assert text[1][2] == "25% (low, below 40 %)"
    assert _colour(flags, 1, 2) == LEVEL_COLOURS[Level.WARN]
    assert "(low)" in flags.cell(1, 2).toolTip()
    assert text[2][2] == "unknown"
    assert flags.cell(2, 2).toolTip() == "Not measured: peak bandwidth of Odd GPU unknown."
    assert _colour(flags, 2, 2) == LEVEL_COLOURS[Level.UNKNOWN]
    assert text[3][2] == "— (idle)"
    assert text[3][3] == "yes: only 3 of the 33 layers asked for went to the GPU"
    assert _colour(flags, 3, 3) == LEVEL_COLOURS[Level.ERROR]
    assert not flags.alert_label.isHidden()
    assert flags.alert_label.text().startswith("m (cpu) runs on the CPU: only 3 of the 33")

    # The fallback mended: the banner goes, the rows shrink to what is running.
    flags.show_points(points[:1])
    assert flags.table.rowCount() == 1 and flags.alert_label.isHidden()


def test_buffer_merges_history_and_live_ticks_in_a_window() -> None:
    buffer = MetricsBuffer(window_s=10)
    buffer.add_snapshot(MetricsSnapshot(t=105, instances=[_point("a", t=105, output_tps=3)]))
    history = MetricsHistory(
        resolution_s=1,
        window_s=10,
        series=[
            InstanceSeries(
                instance="a",
                t=[90.0, 100.0, 101.0],
                values={"output_tps": [1.0, 2.0, None], "running": [0, 1, 1]},
            )
        ],
    )
    buffer.load_history(history)
    # 90 fell out of the window; the live tick after the history stays.
    assert list(buffer.times()) == [100, 101, 105]
    tps = buffer.column("a", "output_tps")
    assert tps[0] == 2 and math.isnan(tps[1]) and tps[2] == 3
    assert buffer.labels["a"] == label_of(_point("a")) == "m (a)"
    assert label_of(_point("b", model="/models/tiny.gguf")) == "tiny.gguf (b)"
    revision = buffer.revision
    buffer.add_snapshot(MetricsSnapshot(t=105, instances=[]))
    assert len(buffer) == 3 and buffer.revision > revision, "a replayed tick is not a new one"
    buffer.set_window(2)
    assert list(buffer.times()) == [105]


def test_vram_is_stacked_by_instance_or_noted_when_unmeasured(qapp: QApplication) -> None:
    charts = MonitorCharts()
    buffer = MetricsBuffer(window_s=60)
    now = time.time()
    for k in range(3):
        buffer.add_snapshot(
            MetricsSnapshot(
                t=now + k,
                instances=[
                    _point("a", t=now + k, vram_bytes=2 * GIB, rss_bytes=GIB),
                    _point("b", t=now + k, vram_bytes=3 * GIB),
                ],
            )
        )
    charts.paint(buffer, SampleBuffer())
    assert list(curve_data(charts.vram_chart, "m (a)")) == [2, 2, 2]
    assert list(curve_data(charts.vram_chart, "m (b)")) == [5, 5, 5], "stacked on a"
    assert charts.vram_chart.value_label.text() == "2.0 GiB  3.0 GiB"
    assert list(curve_data(charts.ram_chart, "m (a)")) == [1, 1, 1]
    assert _axis_label(charts.ram_chart, "left") == "GiB"
    assert _axis_label(charts.vram_chart, "left") == "GiB"

    unmeasured = MetricsBuffer(window_s=60)
    unmeasured.add_snapshot(MetricsSnapshot(t=now, instances=[_point("a", t=now)]))
    charts.paint(unmeasured, SampleBuffer())
    assert charts.vram_chart.stack.currentWidget() is charts.vram_chart.empty_label
    assert charts.vram_chart.empty_label.text() == NO_VRAM

    # The inventory says there is no GPU: a VRAM figure an engine reports means nothing.
    charts.set_gpus([])
    charts.paint(buffer, SampleBuffer())
    assert charts.vram_chart.stack.currentWidget() is charts.vram_chart.empty_label
    assert charts.vram_chart.empty_label.text() == NO_GPU_VRAM
    charts.deleteLater()
