"""The Benchmark page against a real daemon and the real llama-server with the tiny model:
a short benchmark runs with live progress and fills vLLM's table; two runs are compared side
by side with a chart; one is exported as Markdown through the save dialog and one deleted.
With llama.cpp the only engine, A/B is disabled and says why; with mlx_lm.server too, one
click runs both engines and shows them side by side. A context too small for the requests in
flight fails some of them: the page counts them apart, says why above the table with what to
change, marks the run in the list and the chart, and the export carries the failures."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import qasync
from PySide6.QtWidgets import QMessageBox

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import StartRequest
from roundhouse.api.settings import EngineSettings, ModelsSettings, Settings
from roundhouse.base.paths import resolve_home
from roundhouse.core.infra.settings import save_settings
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.bench_page import BenchPage
from tests.daemon_process import DaemonProcess, path_with, running_daemon, start_ready
from tests.gui.conftest import close_bridge, wait_until

READY_S = 60.0
RUN_S = 60.0


async def _run(page: BenchPage, label: str) -> None:
    page.form.label.setText(label)
    assert page.run_button.isEnabled()
    page.run_button.click()
    await wait_until(lambda: page.job is not None or bool(page.status.text()), 10, "a start")
    assert page.status.text() == "", page.status.text()
    assert page.cancel_button.isEnabled() and not page.run_button.isEnabled()
    await wait_until(lambda: page.job is None, RUN_S, "the benchmark to end")
    assert page.status.text() == "", page.status.text()


def test_run_compare_export_delete(
    ui: Ui, qloop: qasync.QEventLoop, llama_daemon: DaemonProcess, tiny_gguf: Path, tmp_path: Path
) -> None:
    async def scenario() -> None:
        # One engine thread: more would starve the app's loop on a 2-core machine.
        options = InstanceOptions(model=str(tiny_gguf), ctx_size=512, parallel=2, threads=1)
        request = StartRequest(engine=EngineId.LLAMA_CPP, options=options)
        await start_ready(llama_daemon, request, READY_S)
        # Listed by the file's stem, never its path.
        model = tiny_gguf.stem
        page = ui.window.show_page(BenchPage.title)
        assert isinstance(page, BenchPage)
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        await wait_until(lambda: page.form.picker.findText(model) >= 0, 20, "the model listed")
        page.form.picker.set_model(model)
        page.form.prompts.setValue(4)
        page.form.concurrency.setValue(2)
        page.form.input_len.setValue(16)
        page.form.output_len.setValue(8)

        await _run(page, "first")
        await wait_until(lambda: page.table.value("Successful requests") == "4", 10, "table")
        assert page.table.value("Failed requests") == "0"
        assert page.table.value("Maximum request concurrency") == "2"
        assert float(page.table.value("Output token throughput (tok/s)") or 0) > 0
        assert page.progress_label.text().startswith("4 of 4 done: 4 succeeded · ")
        await wait_until(lambda: page.results.rowCount() == 1, 10, "the run listed")
        first = page.results.ids()[0]

        await _run(page, "second")
        await wait_until(lambda: page.results.rowCount() == 2, 10, "both runs listed")
        page.results.selectAll()
        assert page.buttons["Compare"].isEnabled() and not page.buttons["Show"].isEnabled()
        page.buttons["Compare"].click()
        await wait_until(lambda: page.table.columnCount() == 3, 10, "the comparison")
        headers = [page.table.horizontalHeaderItem(c).text() for c in (1, 2)]
        assert any(h.startswith("second") for h in headers), headers
        assert any(h.startswith("first") for h in headers), headers
        assert page.table.value("Successful requests", 1) == "4"
        assert len(page.chart.bars) == 4  # throughput and latency bars for each run

        page.results.select_ids([first])
        assert page.buttons["Export Markdown…"].isEnabled()
        page.buttons["Export Markdown…"].click()
        dialog = page.export_dialog
        assert dialog is not None and dialog.isVisible()
        target = tmp_path / "first.md"
        dialog.selectFile(str(target))
        dialog.accept()
        await wait_until(target.exists, 10, "the export written")
        text = target.read_text(encoding="utf-8")
        assert "| Successful requests | 4 |" in text and first in text

        page.buttons["Delete…"].click()
        box = page.confirm_box
        assert box is not None
        delete = next(b for b in box.buttons() if b.text() == "Delete")
        assert box.buttonRole(delete) == QMessageBox.ButtonRole.DestructiveRole
        delete.click()
        await wait_until(
            lambda: page.results.rowCount() == 1 and first not in page.results.ids(),
            10,
            "the result deleted",
        )

        # Only llama.cpp can load this daemon's models (mlx-lm may be installed, but the
        # library has no MLX model): A/B cannot run and says why.
        await wait_until(lambda: ui.bridge.engines is not None, 20, "the engines")
        page.ab.refresh()
        assert not page.ab.run_button.isEnabled()
        why = page.ab.run_button.toolTip()
        assert "two engines" in why or "needs a local model" in why, why

    try:
        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, ui.bridge)


def test_ab_in_one_click(
    ui: Ui,
    qloop: qasync.QEventLoop,
    llama_server_binary: Path,
    mlx_python: str,
    tiny_gguf: Path,
    tiny_hf_model: Path,
    home_root: Path,
) -> None:
    home = resolve_home(home_root)
    home.ensure()
    folders = [str(tiny_gguf.parent), str(tiny_hf_model.parent)]
    settings = Settings(
        engines=EngineSettings(python_paths=[mlx_python]),
        models=ModelsSettings(library_folders=folders),
    )
    save_settings(home.settings_file, settings)

    async def scenario() -> None:
        page = ui.window.show_page(BenchPage.title)
        assert isinstance(page, BenchPage)
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        await wait_until(lambda: page.ab.engine_b.count() >= 2, 30, "two engines listed")
        page.ab.engine_a.setCurrentIndex(page.ab.engine_a.findData(EngineId.LLAMA_CPP))
        page.ab.engine_b.setCurrentIndex(page.ab.engine_b.findData(EngineId.MLX))
        await wait_until(lambda: page.ab.model_b.count() > 0, 20, "the local models")
        page.ab.model_a.setCurrentIndex(page.ab.model_a.findData(str(tiny_gguf)))
        page.ab.model_b.setCurrentIndex(page.ab.model_b.findData(str(tiny_hf_model)))
        assert page.ab.run_button.isEnabled(), page.ab.run_button.toolTip()
        page.form.prompts.setValue(4)
        page.form.concurrency.setValue(2)
        page.form.input_len.setValue(16)
        page.form.output_len.setValue(8)
        page.form.label.setText("ab")
        page.ab.run_button.click()
        await wait_until(lambda: page.ab.busy, 10, "the A/B to start")
        assert not page.run_button.isEnabled() and page.cancel_button.isEnabled()
        await wait_until(lambda: not page.ab.busy, 240, "the A/B to end")
        await wait_until(lambda: page.table.columnCount() == 3, 10, "both runs side by side")
        assert page.ab.state.text().startswith("Done"), page.ab.state.text()
        engines = [r.engine for r in page.shown]
        assert engines == ["llama.cpp", "mlx"]
        failures = [r.metrics.failures for r in page.shown]
        assert page.table.value("Successful requests", 0) == "4", failures
        assert page.table.value("Successful requests", 1) == "4", failures
        assert page.run_button.isEnabled()

    with running_daemon(home_root, env=path_with(llama_server_binary)):
        try:
            qloop.run_until_complete(scenario())
        finally:
            close_bridge(qloop, ui.bridge)


def test_failures_are_counted_explained_marked_and_exported(
    ui: Ui, qloop: qasync.QEventLoop, llama_daemon: DaemonProcess, tiny_gguf: Path, tmp_path: Path
) -> None:
    async def scenario() -> None:
        # 256 tokens shared by llama-server's own number of slots (parallel left to it, so
        # its KV cache is unified): 4 requests of 50 + 120 tokens at once overflow it, and
        # the engine fails those it cannot fit with "Context size has been exceeded.".
        options = InstanceOptions(model=str(tiny_gguf), ctx_size=256, threads=1)
        request = StartRequest(engine=EngineId.LLAMA_CPP, options=options)
        await start_ready(llama_daemon, request, READY_S)
        model = tiny_gguf.stem
        page = ui.window.show_page(BenchPage.title)
        assert isinstance(page, BenchPage)
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        await wait_until(lambda: page.form.picker.findText(model) >= 0, 20, "the model listed")
        page.form.picker.set_model(model)
        page.form.prompts.setValue(5)
        page.form.concurrency.setValue(4)
        page.form.input_len.setValue(50)
        page.form.output_len.setValue(120)
        assert page.failures.isHidden()

        await _run(page, "too small")
        await wait_until(lambda: len(page.shown) == 1, 10, "the run shown")
        m = page.shown[0].metrics
        assert m.failed >= 1 and m.completed + m.failed == 5, m.failures
        counts = f"{m.completed} of 5 succeeded, {m.failed} failed"
        assert page.progress_label.text().startswith(f"5 of 5 done: {m.completed} succeeded")
        assert f"{m.failed} failed" in page.progress_label.text()

        # The banner above the table: the counts, the engine's reason with its count, and
        # what to change with the engine's own numbers (from its /props).
        await wait_until(lambda: page.failures.isVisible(), 10, "the failures banner")
        said = page.failures.text()
        # Which requests the engine fits depends on timing: now and then none of them.
        assert (counts if m.completed else "Every request failed (5 of 5)") in said, said
        assert f"{m.failed} × Context size has been exceeded." in said, said
        assert "context of 256 tokens is shared by its 4 slots" in said, said
        assert "maximum concurrency" in said, said
        header = page.table.horizontalHeaderItem(1).text()
        if m.completed:
            value = page.table.value("Output token throughput (tok/s)") or ""
            assert value.endswith("(successful only)"), value
            assert counts in header, header
        else:  # kept as failed: no figures at all
            assert page.table.value("Output token throughput (tok/s)") is None
            assert header.endswith("FAILED"), header
            assert not page.chart.bars  # nothing charted as if measured
            assert page.status.text() == "", page.status.text()

        # Marked in the kept results; the chart names the run in words, not by its id.
        await wait_until(lambda: page.results.rowCount() == 1, 10, "the run listed")
        assert page.results.text_at(0, "Requests") == counts
        assert "Context size has been exceeded" in page.results.text_at(0, "Failures")
        run_id = page.results.ids()[0]
        assert all(run_id not in name for name in page.chart.names), page.chart.names
        assert run_id not in page.chart.legend.text()
        assert "too small on llama.cpp" in page.chart.legend.text()
        assert "too small on llama.cpp" in page.chart.names[0]
        assert f"{m.failed} failed" in page.chart.names[0]

        page.results.select_ids([run_id])
        page.buttons["Export CSV…"].click()
        dialog = page.export_dialog
        assert dialog is not None
        target = tmp_path / "failed.csv"
        dialog.selectFile(str(target))
        dialog.accept()
        await wait_until(target.exists, 10, "the export written")
        rows = dict(csv.reader(io.StringIO(target.read_text(encoding="utf-8"))))
        assert rows["failed"] == str(m.failed)
        assert rows["status"] == ("failed" if not m.completed else "partial")
        assert rows["failure_1_reason"] == "Context size has been exceeded."
        assert "ctx_size" in rows["failure_1_advice"]

        # A clean run clears the banner.
        page.form.prompts.setValue(2)
        page.form.concurrency.setValue(1)
        page.form.input_len.setValue(8)
        page.form.output_len.setValue(4)
        await _run(page, "fits")
        await wait_until(lambda: page.shown and page.shown[0].request.label == "fits", 10, "shown")
        assert page.shown[0].metrics.failed == 0
        assert page.failures.isHidden()
        assert page.progress_label.text().startswith("2 of 2 done: 2 succeeded ·")

    try:
        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, ui.bridge)
