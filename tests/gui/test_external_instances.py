"""Engines Roundhouse did not start, from the Engines page, against a real daemon: a server
attached by URL (a wrong key refused in the dialog, the right one kept), a running vLLM
stand-in found by Scan and stopped after asking, detaching; and the metrics of a real
llama-server, or why an engine has none."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtWidgets import QMessageBox

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceOrigin, StartRequest
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.engines_page import EnginesPage
from roundhouse.gui.widgets.instances_section import InstancesSection
from tests.daemon_process import DaemonProcess, path_with, running_daemon
from tests.fakes.launchers import start_vllm_serve
from tests.fakes.openai_engines import EngineStandin
from tests.gui.conftest import wait_until
from tests.processes import alive, free_port

KEY = "sk-endpoint-secret"


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[EngineStandin]:
    standin = start_vllm_serve(tmp_path / "keyed", free_port(), "org/keyed", "--api-key", KEY)
    try:
        yield standin
    finally:
        standin.stop()


@pytest.fixture
def external_daemon(
    llama_server_binary: Path, keyed: EngineStandin, home_root: Path, tmp_path: Path
) -> Iterator[DaemonProcess]:
    env = {
        **path_with(llama_server_binary),
        # No Ollama here: nothing answers on this port.
        "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
        "PYTHON_KEYRING_BACKEND": "tests.fakes.keyring_backend.FileKeyring",
        "ROUNDHOUSE_TEST_KEYRING": str(tmp_path / "keyring.json"),
    }
    with running_daemon(home_root, env=env) as process:
        yield process


def _row(section: InstancesSection, port: int) -> dict[str, str] | None:
    return next((r for r in section.row_texts() if r["Port"] == str(port)), None)


def _confirm(box: QMessageBox | None, text: str) -> None:
    assert box is not None
    [button] = [b for b in box.buttons() if b.text() == text]
    button.click()


def test_attach_scan_stop_detach_and_metrics(
    ui: Ui,
    qloop: qasync.QEventLoop,
    external_daemon: DaemonProcess,
    keyed: EngineStandin,
    tiny_gguf: Path,
    tmp_path: Path,
) -> None:
    found: list[EngineStandin] = []

    async def scenario() -> None:
        page = ui.window.show_page("Engines")
        assert isinstance(page, EnginesPage)
        section = page.instances
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        await wait_until(lambda: ui.bridge.instances is not None, 10, "the instances")
        assert section.scan_button.isEnabled() and section.attach_button.isEnabled()

        # Attach: a wrong key is refused in the dialog, which stays open; the right one works.
        dialog = section.open_attach_dialog()
        assert dialog.key_edit.echoMode() == dialog.key_edit.EchoMode.Password
        assert not dialog.attach_button.isEnabled(), "no URL yet"
        dialog.url_edit.setText(keyed.base_url)
        dialog.key_edit.setText("sk-wrong")
        dialog.name_edit.setText("Lab box")
        dialog.attach_button.click()
        await wait_until(lambda: bool(dialog.error_text()), 15, "the refusal")
        assert "key" in dialog.error_text().lower()
        assert dialog.isVisible() and section.attach_dialog is dialog
        dialog.key_edit.setText(KEY)
        dialog.attach_button.click()
        await wait_until(lambda: section.attach_dialog is None, 15, "the dialog to close")
        await wait_until(lambda: section.selected() is not None, 5, "the new row selected")
        endpoint = section.selected()
        assert endpoint is not None and endpoint.name == "Lab box"
        row = _row(section, keyed.port)
        assert row is not None and row["Origin"] == "external · unprotected"
        assert endpoint.unprotected is not None and "own API key" in endpoint.unprotected
        assert row["Engine"] == "openai: Lab box" and row["Model"] == "org/keyed"
        assert section.stop_button.text() == "Detach"
        assert "org/keyed" in section.message_label.text()

        # Metrics of an engine without any: the reason, and no more asking.
        metrics = section.open_metrics_of_selected()
        assert metrics is not None
        await wait_until(lambda: metrics.unavailable, 10, "the reason")
        assert "metrics" in metrics.status.text() and metrics.table.isHidden()
        metrics.close()

        # Scan finds a vLLM started after the daemon; stopping it asks, then stops it.
        vllm = start_vllm_serve(tmp_path / "vllm", free_port(), "org/tiny-model")
        found.append(vllm)
        # It is this process's child: reap it as it ends, as a shell would, or the daemon
        # waits out its grace time for a zombie.
        threading.Thread(target=vllm.proc.wait, daemon=True).start()
        section.scan_button.click()
        await wait_until(lambda: _row(section, vllm.port) is not None, 30, "the scan")
        assert "vllm on port" in section.message_label.text()
        # Picked by port: other engines may run on this machine too.
        assert section.select_instance(
            next(i.id for i in section.model.instances() if i.port == vllm.port)
        )
        scanned = section.selected()
        assert scanned is not None and scanned.origin == InstanceOrigin.EXTERNAL
        assert scanned.port == vllm.port and section.stop_button.text() == "Stop"
        # Marked unprotected, with what to do where it is read; kept from preset models
        # until allowed from its menu.
        assert scanned.unprotected is not None
        assert section.message_label.text().startswith(scanned.unprotected)
        assert section.presets_action.isVisible() and not section.presets_action.isChecked()
        section.presets_action.trigger()
        await wait_until(
            lambda: (i := section.selected()) is not None and i.may_serve_presets, 15, "allowed"
        )
        assert section.presets_action.isChecked()
        assert "may now serve the models your presets start" in section.message_label.text()
        section.stop_button.click()
        box = section.confirm_box
        assert box is not None and f"port {vllm.port}" in box.text()
        _confirm(box, "Stop it")
        await wait_until(lambda: _row(section, vllm.port) is None, 30, "the stop")
        assert section.message_label.text().endswith("stopped."), section.message_label.text()
        await wait_until(lambda: vllm.proc.returncode is not None, 15, "the process to end")

        # Detach asks too, and leaves the server running.
        assert section.select_instance(endpoint.id)
        section.stop_button.click()
        _confirm(section.confirm_box, "Detach")
        await wait_until(lambda: _row(section, keyed.port) is None, 15, "the detach")
        assert alive(keyed.proc.pid)

        # The metrics of a real llama-server: its own llamacpp:* series, read every 2 s.
        start = StartRequest(
            engine=EngineId.LLAMA_CPP,
            options=InstanceOptions(model=str(tiny_gguf), ctx_size=512, parallel=1),
        )
        call = ui.bridge.start_instance(start)
        await wait_until(lambda: call.done, 15, "the start")
        assert call.result is not None, call.failure
        ready = [r for r in section.row_texts() if r["Engine"] == "llama.cpp"]
        await wait_until(
            lambda: any(r["Status"] == "ready" for r in section.row_texts()), 60, "ready"
        )
        assert ready
        assert section.select_instance(call.result.id)
        metrics = section.open_metrics_of_selected()
        assert metrics is not None
        await wait_until(lambda: bool(metrics.values()), 15, "the metrics")
        assert all(name.startswith("llamacpp:") for name in metrics.values())
        assert "read every 2 s" in metrics.status.text()
        first = metrics.metrics
        await wait_until(lambda: metrics.metrics is not first, 5, "a second reading")
        metrics.close()
        section.stop_button.click()
        started_id = call.result.id
        await wait_until(lambda: section.model.row_of(started_id) is None, 60, "the stop")

    try:
        qloop.run_until_complete(scenario())
    finally:
        for standin in found:
            standin.stop()
        qloop.run_until_complete(ui.bridge.aclose())
