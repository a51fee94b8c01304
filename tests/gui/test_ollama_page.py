"""The Ollama page against a real daemon attached to the Ollama stand-in (run as `ollama
serve`): pull through the download queue, the models listed, show, load (the loaded table
with its GPU share), unload, delete; then Ollama goes away and the page says so, without
dialogs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtWidgets import QApplication, QMessageBox

from roundhouse.api.downloads import DownloadState
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.ollama_page import OllamaPage
from tests.daemon_process import DaemonProcess, running_daemon
from tests.fakes.launchers import start_ollama_serve
from tests.fakes.ollama import OllamaStandin
from tests.gui.conftest import wait_until
from tests.processes import free_port


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[OllamaStandin]:
    started = start_ollama_serve(tmp_path / "ollama", free_port())
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def ollama_daemon(standin: OllamaStandin, home_root: Path) -> Iterator[DaemonProcess]:
    with running_daemon(home_root, env={"OLLAMA_HOST": f"127.0.0.1:{standin.port}"}) as process:
        yield process


def _message_boxes() -> list[QMessageBox]:
    return [
        w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()
    ]


def test_pull_list_show_load_unload_delete_then_ollama_goes_away(
    ui: Ui, qloop: qasync.QEventLoop, ollama_daemon: DaemonProcess, standin: OllamaStandin
) -> None:
    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        page = ui.window.show_page("Ollama")
        assert isinstance(page, OllamaPage)
        # The status is written once both lists (models, loaded) have answered.
        await wait_until(
            lambda: page.status_label.text().startswith("Ollama at"), 10, "the first listing"
        )
        assert page.base_url == standin.base_url and not page.absent
        assert page.models.rowCount() == 0 and page.loaded.rowCount() == 0
        assert f"Ollama at {standin.base_url}" in page.status_label.text()

        # Pull: queued in the daemon's download queue, progress in bytes, then listed.
        pull = page.pull_view
        assert not pull.pull_button.isEnabled(), "no name, no pull"
        pull.name_edit.setText("tiny")
        pull.pull_button.click()
        assert pull.running and pull.stop_button.isVisible()
        await wait_until(lambda: pull.job_id is not None, 10, "the pull queued")
        assert pull.job_id is not None and pull.job_id.startswith("ollama-")
        await wait_until(lambda: page.models.keys() == ["tiny:latest"], 20, "the pulled model")
        await wait_until(lambda: not pull.running, 10, "the pull to end")
        assert pull.status.text() == "Pulled tiny."
        assert pull.item is not None and pull.item.state == DownloadState.DONE
        assert pull.item.size > 8 * 1024 and pull.item.bytes_done == pull.item.size
        row = page.models.texts()[0]
        assert (row["Parameters"], row["Quantization"], row["Family"]) == (
            "12.35M",
            "Q4_K_M",
            "llama",
        )

        # Show: the details and GGUF metadata.
        assert page.select_model("tiny:latest")
        page.show_button.click()
        await wait_until(lambda: page.show_dialog is not None, 10, "the details")
        dialog = page.show_dialog
        assert dialog is not None and dialog.info()["general.architecture"] == "llama"
        dialog.reject()
        await wait_until(lambda: page.show_dialog is None, 5, "the details to close")

        # Load for ever: the loaded table says how much sits on the GPU.
        page.keep_alive.setCurrentIndex(page.keep_alive.findText("forever"))
        page.context.setValue(4096)
        page.load_button.click()
        await wait_until(lambda: page.loaded.keys() == ["tiny:latest"], 15, "the load")
        loaded = page.loaded.texts()[0]
        assert loaded["On the GPU"].startswith("100% (") and loaded["Until"] == "kept loaded"
        assert page.message_label.text() == "Loaded tiny:latest."

        assert page.select_loaded("tiny:latest")
        page.unload_button.click()
        await wait_until(lambda: page.loaded.rowCount() == 0, 15, "the unload")

        assert page.select_model("tiny:latest")
        page.delete_button.click()
        box = page.confirm_box
        assert box is not None and "tiny:latest" in box.text()
        [delete] = [b for b in box.buttons() if b.text() == "Delete"]
        delete.click()
        await wait_until(lambda: page.models.rowCount() == 0, 15, "the deletion")

        # A pull of something Ollama does not have fails in words.
        pull.pull("no-such-model")
        await wait_until(lambda: not pull.running, 15, "the failed pull")
        assert "failed" in pull.status.text() and "no-such-model" in pull.status.text()

        # Ollama goes away: the page says so and how to start it; Retry asks again.
        standin.stop()
        await wait_until(lambda: page.absent, 15, "the page to notice")
        assert (
            "isn't running" in page.absent_view.detail.text()
            or "not" in page.absent_view.title.text()
        )
        assert page.absent_view.retry_button.isEnabled()
        page.absent_view.retry_button.click()
        await wait_until(lambda: not page._pending, 10, "the retry")
        assert page.absent and _message_boxes() == []

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
