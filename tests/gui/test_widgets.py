"""The hardware widgets fed with made-up inventories and samples (no daemon needed)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import qasync
from PySide6.QtCore import QObject, QPointF, Signal
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from roundhouse.api.hardware import (
    CpuInfo,
    DiskInfo,
    EngineRecommendation,
    GpuInfo,
    GpuSample,
    GpuVendor,
    HardwareInventory,
    HardwareSample,
    MemoryInfo,
    Unseen,
)
from roundhouse.gui.widgets.charts import HardwareCharts
from roundhouse.gui.widgets.gpu_card import UNIFIED_NOTE
from roundhouse.gui.widgets.inventory_view import InventoryView
from roundhouse.gui.widgets.sample_buffer import SampleBuffer

GIB = 1024**3


def _sample(t: float, gpus: list[GpuSample] | None = None) -> HardwareSample:
    return HardwareSample(
        t=t, cpu_percent=12.5, ram_used_bytes=4 * GIB, ram_total_bytes=16 * GIB, gpus=gpus or []
    )


def _inventory(gpus: list[GpuInfo]) -> HardwareInventory:
    return HardwareInventory(
        os="Linux",
        os_version="6.1",
        cpu=CpuInfo(
            brand="Test CPU <9000>",
            arch="x86_64",
            physical_cores=4,
            logical_cores=8,
            features=["avx", "avx2"],
        ),
        memory=MemoryInfo(total_bytes=16 * GIB, available_bytes=10 * GIB),
        disk=DiskInfo(path="/models", total_bytes=500 * GIB, free_bytes=120 * GIB),
        gpus=gpus,
        unseen=[Unseen(what="AMD GPUs", why="amdsmi is not installed")],
        recommendations=[
            EngineRecommendation(engine="vllm", title="vLLM", rank=2, reason="CUDA GPU"),
            EngineRecommendation(engine="llama.cpp", title="llama.cpp", rank=1, reason="fits"),
        ],
    )


NVIDIA = GpuInfo(
    index=0,
    vendor=GpuVendor.NVIDIA,
    name="RTX Test",
    memory_total_bytes=24 * GIB,
    memory_used_bytes=2 * GIB,
    memory_free_bytes=22 * GIB,
    utilization_percent=5,
    temperature_c=40,
    power_w=30,
    power_limit_w=450,
    driver_version="550.54",
    cuda_version="12.4",
    source="nvml",
)
APPLE = GpuInfo(
    index=1, vendor=GpuVendor.APPLE, name="M3", memory_total_bytes=12 * GIB, unified=True,
    source="metal",
)  # fmt: skip


def test_sample_buffer_drops_repeats_and_old_samples() -> None:
    buffer = SampleBuffer(window_s=10)
    buffer.extend(_sample(t) for t in (1.0, 2.0, 2.0, 1.5, 3.0))
    assert [s.t for s in buffer.samples] == [1.0, 2.0, 3.0]
    revision = buffer.revision
    buffer.append(_sample(3.0))
    assert buffer.revision == revision
    buffer.append(_sample(12.5))
    assert [s.t for s in buffer.samples] == [3.0, 12.5]


def test_gpu_charts_say_no_gpu(qtbot: QtBot) -> None:
    charts = HardwareCharts()
    qtbot.addWidget(charts)
    charts.set_gpus([])
    assert charts.vram_chart.stack.currentWidget() is charts.vram_chart.empty_label
    assert "No GPU" in charts.gpu_util_chart.empty_label.text()
    charts.add_samples([_sample(100.0), _sample(101.0)])
    assert charts.point_count() == 0  # nothing is drawn before the repaint timer ticks
    assert charts.repaint_if_changed()
    assert charts.point_count() == 2
    assert not charts.repaint_if_changed()  # no new data: no work
    assert charts.cpu_chart.value_label.text() == "12 %"


def test_gpu_charts_draw_one_series_per_gpu(qtbot: QtBot) -> None:
    charts = HardwareCharts()
    qtbot.addWidget(charts)
    charts.set_gpus([NVIDIA, APPLE])
    gpus = [GpuSample(index=0, memory_used_bytes=3 * GIB, utilization_percent=50)]
    charts.add_samples([_sample(100.0, gpus), _sample(101.0, gpus)])
    charts.repaint_if_changed()
    assert charts.vram_chart.stack.currentWidget() is charts.vram_chart.plot
    assert charts.gpu_util_chart.point_count() == 2
    # The second GPU has no counters: a gap, shown as a dash, not a zero.
    assert charts.vram_chart.value_label.text() == "3.0 GiB  —"


def test_inventory_view_shows_gpus_engines_and_what_was_not_seen(qtbot: QtBot) -> None:
    view = InventoryView()
    qtbot.addWidget(view)
    view.show_inventory(_inventory([NVIDIA, APPLE]))
    assert view.system.value("Processor") == "Test CPU <9000> (x86_64)"
    assert view.system.value("Cores") == "4 physical, 8 logical"
    assert view.memory.value("Disk") == "120.0 GiB free of 500.0 GiB"
    assert view.gpu_box.isHidden()
    nvidia, apple = view.gpu_cards[0], view.gpu_cards[1]
    assert nvidia.value("Memory") == "24.0 GiB (22.0 GiB free, 2.0 GiB used)"
    assert nvidia.value("Driver") == "550.54 (CUDA 12.4)"
    assert nvidia.value("Power") == "30 W of 450 W"
    assert nvidia.value("Note") is None
    assert apple.value("Note") == UNIFIED_NOTE
    engines = view.engines.text()
    assert engines.index("1. llama.cpp") < engines.index("2. vLLM")
    assert "amdsmi is not installed" in view.unseen.text()

    view.show_sample(_sample(1.0, [GpuSample(index=0, memory_used_bytes=8 * GIB, power_w=200)]))
    assert nvidia.value("Memory") == "24.0 GiB (16.0 GiB free, 8.0 GiB used)"
    assert nvidia.value("Power") == "200 W of 450 W"
    assert view.memory.value("RAM in use") == "4.0 GiB of 16.0 GiB (25 %)"

    view.show_inventory(_inventory([]))
    assert view.gpu_cards == {}
    assert view.gpu_box.value("GPU") == "None seen: engines will run on the CPU."


class _Emitter(QObject):
    fired = Signal()


def test_qt_calls_keep_references_to_none_and_true() -> None:
    # PySide6-Essentials 6.12.0 (excluded in pyproject.toml) returned None from void
    # methods and True from emit() without a reference; on Python 3.11 the counts reached
    # zero and CPython aborted ("none_dealloc"). This fails if such a build comes back.
    emitter = _Emitter()
    none_before, true_before = sys.getrefcount(None), sys.getrefcount(True)
    for _ in range(10_000):
        emitter.setObjectName("x")
        emitter.fired.emit()
    assert sys.getrefcount(None) >= none_before - 100
    assert sys.getrefcount(True) >= true_before - 100


def test_hovering_a_chart_shows_the_values_under_the_mouse(qtbot: QtBot) -> None:
    charts = HardwareCharts()
    qtbot.addWidget(charts)
    charts.resize(800, 600)
    charts.show()
    charts.add_samples(
        HardwareSample(
            t=1000.0 + i, cpu_percent=float(i), ram_used_bytes=GIB, ram_total_bytes=2 * GIB
        )
        for i in range(40)
    )
    charts.repaint_if_changed()
    card = charts.cpu_chart
    view = card.plot.getPlotItem().getViewBox()
    card.plot.scene().sigMouseMoved.emit(view.mapViewToScene(QPointF(1020.0, 50.0)))
    assert card.value_label.text().endswith(": 20 %")
    card.plot.scene().sigMouseMoved.emit(QPointF(-5.0, -5.0))
    assert card.value_label.text() == "39 %"


def test_a_follow_cancelled_before_it_ran_still_ends(
    qloop: qasync.QEventLoop, home_root: Path
) -> None:
    """Stop pressed in the same loop tick as Send: the follower must hear the end, or a
    window waiting for it stays 'streaming' for good."""
    from roundhouse.base.paths import resolve_home
    from roundhouse.gui.daemon_bridge import DaemonBridge

    bridge = DaemonBridge(resolve_home(home_root), auto_start=False)

    async def never(_client: object) -> AsyncIterator[int]:
        yield 1

    follow = bridge.follow("a stream", never)  # type: ignore[arg-type]
    ends: list[str] = []
    follow.cancelled.connect(lambda: ends.append("cancelled"))
    follow.failed.connect(lambda _f: ends.append("failed"))
    follow.cancel()

    async def settle() -> None:
        for _ in range(5):
            await asyncio.sleep(0)

    qloop.run_until_complete(settle())
    assert ends == ["cancelled"]
    assert follow.done


def test_a_call_made_after_the_loop_ended_answers_not_connected(
    qapp: QApplication, home_root: Path
) -> None:
    """A widget's timer may fire after the asyncio loop is gone (the app closing): the call
    answers from Qt's loop instead of raising inside a Qt slot."""
    from PySide6.QtCore import QCoreApplication

    from roundhouse.base.paths import resolve_home
    from roundhouse.gui.daemon_bridge import DaemonBridge

    asyncio.set_event_loop(None)
    bridge = DaemonBridge(resolve_home(home_root), auto_start=False)
    call = bridge.call("read something", lambda client: client.status())  # type: ignore[arg-type, return-value]
    failures: list[object] = []
    call.failed.connect(failures.append)
    for _ in range(5):
        QCoreApplication.processEvents()
    assert len(failures) == 1


def test_a_session_cancelled_while_it_waits_for_the_last_one_ends(
    qloop: qasync.QEventLoop, home_root: Path
) -> None:
    """Retry pressed, then the app closing in the same moment: the new session is cancelled
    while it still waits for the old one to end. It must end too; it used to swallow that
    cancellation, reconnect forever and hold `aclose` (and a test run) up for good."""
    from roundhouse.base.paths import resolve_home
    from roundhouse.gui.daemon_bridge import DaemonBridge

    bridge = DaemonBridge(resolve_home(home_root), auto_start=False)
    close_client = bridge._close_client

    async def slow_close() -> None:
        # A session's cleanup that takes a moment whatever happens (a connection closing),
        # so the next session is surely waiting on it when the cancellation comes.
        until = asyncio.get_running_loop().time() + 0.2
        cancelled = False
        while asyncio.get_running_loop().time() < until:
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                cancelled = True
        await close_client()
        if cancelled:
            raise asyncio.CancelledError

    bridge._close_client = slow_close  # type: ignore[method-assign]

    async def scenario() -> None:
        bridge.start()
        await asyncio.sleep(0.05)
        bridge.retry()  # cancels the first session; the second waits for it to end
        await asyncio.sleep(0.05)
        started = time.monotonic()
        # (The old code's swallowing also defeated wait_for's own cancellation: time it.)
        await asyncio.wait_for(bridge.aclose(), 10)
        assert time.monotonic() - started < 5

    qloop.run_until_complete(scenario())
