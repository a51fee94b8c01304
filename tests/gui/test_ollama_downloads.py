"""Ollama pulls in the Models page's Downloads tab, against a real daemon and the Ollama
stand-in: a pull queued from the Ollama page shows as a row labelled Ollama, with bytes, speed
and ETA; Pause and Resume from the row; it finishes in both places."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync

from roundhouse.api.downloads import DownloadState, OllamaPullItem
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.models_page import DOWNLOADS_TAB, ModelsPage
from roundhouse.gui.pages.ollama_page import OllamaPage
from tests.daemon_process import DaemonProcess, running_daemon
from tests.fakes.ollama import OllamaStandin, start_standin
from tests.gui.conftest import wait_until
from tests.processes import free_port

ROW = "ollama:small"


@pytest.fixture
def slow_ollama(tmp_path: Path) -> Iterator[OllamaStandin]:
    # "small" is 24 KiB of weights in 1 KiB steps: about 5 s, long enough to pause it.
    started = start_standin(tmp_path / "ollama", free_port(), "--pull-delay", "0.2")
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def ollama_daemon(slow_ollama: OllamaStandin, home_root: Path) -> Iterator[DaemonProcess]:
    env = {
        "OLLAMA_HOST": f"127.0.0.1:{slow_ollama.port}",
        # The Models page searches the Hub when shown: refused at once, never the network.
        "HF_HUB_OFFLINE": "1",
    }
    with running_daemon(home_root, env=env) as process:
        yield process


def test_a_pull_shows_in_downloads_and_pauses_and_resumes_from_its_row(
    ui: Ui, qloop: qasync.QEventLoop, ollama_daemon: DaemonProcess, slow_ollama: OllamaStandin
) -> None:
    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        ollama = ui.window.show_page("Ollama")
        assert isinstance(ollama, OllamaPage)
        await wait_until(lambda: ollama.base_url is not None, 10, "the first listing")
        ollama.pull_view.pull("small")
        await wait_until(lambda: ollama.pull_view.job_id is not None, 10, "the pull queued")

        page = ui.window.show_page("Models")
        assert isinstance(page, ModelsPage)
        page.show_tab(DOWNLOADS_TAB)
        panel = page.downloads

        def transferring() -> bool:
            row = panel.row_for(ROW)
            return row is not None and 0 < row.bar.value() < row.bar.maximum()

        await wait_until(transferring, 20, "progress")
        row = panel.row_for(ROW)
        assert row is not None and isinstance(row.item, OllamaPullItem)
        assert row.repo_label.text() == f"Ollama · {slow_ollama.base_url}"
        assert " of " in row.line_label.text() and "pulling" in row.line_label.text()
        assert row.pause_button.isEnabled() and not row.resume_button.isEnabled()
        assert "Ollama keeps" in row.cancel_button.toolTip()
        assert page.tabs.tabText(DOWNLOADS_TAB) == "Downloads (1)"
        assert "Ollama" in panel.where_label.text()

        row.pause_button.click()
        await wait_until(lambda: row.item.state == DownloadState.PAUSED, 15, "the pause")
        kept = row.item.bytes_done
        assert 0 < kept < row.item.size and row.resume_button.isEnabled()
        assert "keeps" in row.error_label.text()
        # The Ollama page's own view follows the same job.
        await wait_until(lambda: "Paused" in ollama.pull_view.status.text(), 10, "the page")

        row.resume_button.click()
        await wait_until(lambda: row.item.state == DownloadState.DONE, 30, "the pull")
        assert row.item.bytes_done == row.item.size >= kept
        assert row.bar.value() == row.bar.maximum() and row.pause_button.isHidden()
        assert page.tabs.tabText(DOWNLOADS_TAB) == "Downloads"
        await wait_until(
            lambda: ollama.pull_view.status.text() == "Pulled small.", 10, "the page's view"
        )
        assert panel.row_states() == {ROW: "done"}

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
