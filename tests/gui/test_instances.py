"""Running instances on the Engines page, against a real daemon and the real llama-server:
start from the dialog, follow the log, restart, stop; a taken port; a bad model; a lost daemon."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
import qasync
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication

from roundhouse.api.engines import EngineId
from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.dialogs.start_dialog import StartDialog
from roundhouse.gui.pages.engines_page import EnginesPage
from roundhouse.gui.widgets.instances_section import EMPTY_TEXT, InstancesSection
from tests.daemon_process import DaemonProcess
from tests.gui.conftest import wait_until

READY_S = 60.0


def _run(ui: Ui, qloop: qasync.QEventLoop, scenario: Coroutine[Any, Any, None]) -> None:
    """Run the scenario, then end the bridge's tasks while the loop still runs them."""
    try:
        qloop.run_until_complete(scenario)
    finally:
        for dialog in list(_page(ui).instances.log_dialogs.values()):
            dialog.close()
        qloop.run_until_complete(ui.bridge.aclose())


def _page(ui: Ui) -> EnginesPage:
    page = ui.window.show_page("Engines")
    assert isinstance(page, EnginesPage)
    return page


async def _connected(ui: Ui, *, llama: bool = True) -> EnginesPage:
    page = _page(ui)
    ui.bridge.start()
    await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
    await wait_until(lambda: bool(page.cards), 20, "the engines")
    await wait_until(lambda: ui.bridge.instances is not None, 10, "the instance list")
    if llama:
        card = page.card(EngineId.LLAMA_CPP)
        assert card.status_text().startswith("Found: "), card.status_text()
    return page


def _status(section: InstancesSection, row: int = 0) -> str:
    return section.row_texts()[row]["Status"] if section.model.rowCount() > row else ""


def _open_dialog(page: EnginesPage, model: Path) -> StartDialog:
    page.card(EngineId.LLAMA_CPP).start_button.click()
    dialog = page.start_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.engine() == EngineId.LLAMA_CPP
    dialog.model_edit.setText(str(model))
    dialog.ctx_size.setValue(512)
    dialog.parallel.setValue(1)
    return dialog


def test_start_follow_logs_restart_and_stop_from_the_page(
    ui: Ui, qloop: qasync.QEventLoop, llama_daemon: DaemonProcess, tiny_gguf: Path
) -> None:
    async def scenario() -> None:
        page = await _connected(ui)
        section = page.instances
        assert ui.bridge.feed_seq is not None, "the page's instances come by the change feed"
        assert section.model.rowCount() == 0 and section.message_label.text() == EMPTY_TEXT
        card = page.card(EngineId.LLAMA_CPP)
        assert card.start_button.isVisible()
        assert not page.card(EngineId.VLLM).start_button.isVisible()

        card.start_button.click()
        dialog = page.start_dialog
        assert dialog is not None and dialog.isVisible()
        assert dialog.engine() == EngineId.LLAMA_CPP
        for name in ("ctx_size", "n_gpu_layers", "threads", "flash_attn", "cache_type_k"):
            assert dialog.field_visible(name), name
        for name in ("tensor_parallel", "gpu_memory_utilization", "max_loaded_models"):
            assert not dialog.field_visible(name), name
        assert not dialog.start_button.isEnabled()
        assert "Choose a model" in dialog.problem_label.text()
        dialog.model_edit.setText(str(tiny_gguf.with_name("missing.gguf")))
        assert "There is no file" in dialog.problem_label.text()
        dialog.model_edit.setText(str(tiny_gguf))
        dialog.ctx_size.setValue(512)
        dialog.parallel.setValue(1)
        assert dialog.start_button.isEnabled() and dialog.problem_label.isHidden()
        # Before the start: whether the file fits this machine, run with these options.
        await wait_until(lambda: dialog.fit_line.isVisible(), 10, "the fit estimate")
        assert "CPU" in dialog.fit_line.text() or "GPU" in dialog.fit_line.text()
        assert "512" in dialog.fit_line.toolTip(), dialog.fit_line.toolTip()
        # Flash attention changes the compute buffer: the estimate is asked again.
        flash = "off" if "flash attention on" in dialog.fit_line.toolTip() else "on"
        dialog.flash_attn.setCurrentIndex(dialog.flash_attn.findText(flash))
        await wait_until(
            lambda: f"flash attention {flash}" in dialog.fit_line.toolTip(), 10, "a new estimate"
        )

        # A preset for this model: saved, then filled back in after a change.
        await wait_until(lambda: dialog.save_preset_button.isEnabled(), 5, "presets for the model")
        dialog.save_preset_as("small context")
        await wait_until(lambda: dialog.preset_names() == ["small context"], 10, "the preset")
        assert dialog.preset_combo.currentText() == "small context"
        dialog.ctx_size.setValue(4096)
        dialog.choose_preset("small context")
        assert dialog.ctx_size.value() == 512
        dialog.save_preset_as("to delete")
        await wait_until(lambda: len(dialog.preset_names()) == 2, 10, "the second preset")
        assert dialog.preset_combo.currentText() == "to delete"
        dialog.delete_preset_button.click()
        await wait_until(lambda: dialog.preset_names() == ["small context"], 10, "the deletion")

        dialog.start_button.click()
        await wait_until(lambda: page.start_dialog is None, 15, "the dialog to close")
        assert section.model.rowCount() == 1
        info = section.selected()
        assert info is not None, "the new instance is selected"
        assert _status(section).startswith(("starting", "loading", "ready"))
        await wait_until(lambda: _status(section) == "ready", READY_S, "ready")

        row = section.row_texts()[0]
        ready = section.model.instance(0)
        assert row["Engine"] == "llama.cpp"
        assert row["Model"] == "tiny.gguf"
        assert section.model.index(0, 1).data(Qt.ItemDataRole.ToolTipRole) == str(tiny_gguf)
        assert row["Port"] == str(ready.port)
        assert row["Base URL"] == ready.base_url and ready.base_url.endswith("/v1")
        assert row["Memory"].endswith(("MiB", "GiB"))
        assert row["Origin"] == "started"
        assert section.selected() is not None, "the selection survives the updates"
        assert section.stop_button.text() == "Stop" and section.restart_button.isEnabled()

        section.copy_button.click()
        # The engine's own port answers only Roundhouse: apps get the gateway's address.
        copied = QGuiApplication.clipboard().text()
        assert copied == f"{llama_daemon.url}/v1" and copied != ready.base_url
        assert "through the gateway" in section.message_label.text()

        section.logs_button.click()
        logs = section.log_dialogs[ready.id]
        assert logs.isVisible() and logs.view.isReadOnly()
        assert logs.view.maximumBlockCount() == 5000
        await wait_until(lambda: len(logs.lines()) > 5, 10, "log lines")
        assert any("tiny.gguf" in line or "llama" in line for line in logs.lines())
        assert logs.at_end()

        old_pid = ready.pid
        section.restart_button.click()
        assert not section.restart_button.isEnabled(), "one action at a time"
        await wait_until(
            lambda: (i := section.selected()) is not None and i.pid not in (None, old_pid),
            READY_S,
            "a new process",
        )
        await wait_until(lambda: _status(section) == "ready", READY_S, "ready again")

        def after_the_mark() -> list[str]:
            lines = logs.lines()
            marks = [i for i, line in enumerate(lines) if "engine restarted" in line]
            return lines[marks[-1] + 1 :] if marks else []

        await wait_until(lambda: len(after_the_mark()) > 5, 10, "the new process's lines")
        assert logs.restarts_seen == 1

        # The new process is read from its first line, as the first one was.
        def untimed(line: str) -> str:
            return line.split(" ", 1)[-1]  # llama-server stamps each line with its own clock

        assert untimed(after_the_mark()[0]) == untimed(logs.lines()[0])

        section.stop_button.click()
        assert "Stopping" in section.message_label.text()
        await wait_until(lambda: section.model.rowCount() == 0, 60, "the row to go")
        assert section.message_label.text().endswith("stopped.")
        await wait_until(lambda: logs.gone, 10, "the log view to notice")
        assert "no longer listed" in logs.header.text()
        assert logs.lines(), "the last lines stay"

    _run(ui, qloop, scenario())


def test_a_taken_port_is_shown_in_the_dialog_which_stays_open(
    ui: Ui, qloop: qasync.QEventLoop, llama_daemon: DaemonProcess, tiny_gguf: Path
) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]

        async def scenario() -> None:
            page = await _connected(ui)
            page.instances.start_button.click()
            dialog = page.start_dialog
            assert dialog is not None
            assert dialog.engine() == EngineId.LLAMA_CPP
            dialog.model_edit.setText(str(tiny_gguf))
            dialog.port.setValue(port)
            dialog.start_button.click()
            await wait_until(lambda: bool(dialog.error_text()), 15, "the refusal")
            assert dialog.failure is not None and dialog.failure.status == 409
            assert str(port) in dialog.error_text()
            assert dialog.isVisible() and page.start_dialog is dialog
            assert dialog.start_button.isEnabled(), "the user may change the port and retry"
            assert page.instances.model.rowCount() == 0
            dialog.reject()
            await wait_until(lambda: page.start_dialog is None, 5, "the dialog to close")

        _run(ui, qloop, scenario())


def test_a_bad_model_fails_with_its_reason_shows_its_log_and_is_dismissed(
    ui: Ui, qloop: qasync.QEventLoop, llama_daemon: DaemonProcess, tmp_path: Path
) -> None:
    bogus = tmp_path / "not a model.gguf"
    bogus.write_bytes(b"GGUF" + os.urandom(2048))

    async def scenario() -> None:
        page = await _connected(ui)
        section = page.instances
        dialog = _open_dialog(page, bogus)
        dialog.start_button.click()
        await wait_until(lambda: page.start_dialog is None, 15, "the dialog to close")
        await wait_until(lambda: _status(section).startswith("failed"), READY_S, "the failure")
        failed = section.model.instance(0)
        assert failed.error and failed.error in _status(section)
        assert section.row_texts()[0]["Uptime"] == "—"
        assert section.selected() is not None
        assert section.stop_button.text() == "Dismiss"
        assert section.stop_button.isEnabled() and not section.copy_button.isEnabled()

        logs = section.open_logs_of_selected()
        assert logs is not None
        await wait_until(lambda: bool(logs.lines()), 10, "the failed engine's lines")
        assert "failed" in logs.header.text()
        logs.close()

        section.stop_button.click()
        await wait_until(lambda: section.model.rowCount() == 0, 15, "the row to go")
        assert "dismissed" in section.message_label.text()

    _run(ui, qloop, scenario())


def test_a_hung_then_dead_daemon_neither_freezes_the_page_nor_is_flooded(
    ui: Ui, qloop: qasync.QEventLoop, daemon: DaemonProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[float] = []
    listed = DaemonClient.instances

    async def counting(self: DaemonClient):  # type: ignore[no-untyped-def]
        asked.append(time.monotonic())
        return await listed(self)

    monkeypatch.setattr(DaemonClient, "instances", counting)
    failures: list[str] = []

    async def scenario() -> None:
        page = await _connected(ui, llama=False)
        ui.bridge.instances_failed.connect(failures.append)
        # Listed once, at the feed's reset; changes come by the feed, nothing is polled.
        await wait_until(lambda: len(asked) >= 1, 5, "the first listing")

        # A hung daemon: requests wait for their timeout, the loop keeps turning.
        gaps: list[float] = []
        last = [time.monotonic()]

        def tick() -> None:
            now = time.monotonic()
            gaps.append(now - last[0])
            last[0] = now

        timer = QTimer()
        timer.timeout.connect(tick)
        timer.start(50)
        os.kill(daemon.process.pid, signal.SIGSTOP)
        try:
            await asyncio.sleep(2.5)
        finally:
            os.kill(daemon.process.pid, signal.SIGKILL)
            daemon.process.wait(10)
        timer.stop()
        assert max(gaps) < 0.5, f"the UI stalled for {max(gaps):.2f} s"

        await wait_until(lambda: ui.bridge.state == ConnectionState.DISCONNECTED, 15, "the loss")
        assert not page.instances.start_button.isEnabled()
        settled = len(asked)
        await asyncio.sleep(3)
        assert len(asked) == settled, "no listing is sent while disconnected"
        assert len(failures) <= 1, failures

    _run(ui, qloop, scenario())
