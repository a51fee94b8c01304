"""The Models page with no Hugging Face to reach, against a real daemon: a search says at once,
in the page's notice style, that it needs a connection and offers the other ways (import a
file, add a models folder); the empty Library says how to add models, and its buttons lead
there: a folder added is saved in the settings and its model listed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import qasync

from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.models_page import LIBRARY_TAB, SEARCH_TAB, ModelsPage
from roundhouse.gui.widgets.models_library_empty import EMPTY_TEXT
from tests.daemon_process import running_daemon
from tests.gui.conftest import WAIT_SLACK, close_bridge, wait_until
from tests.processes import free_port
from tests.support.standins import keyring_env

# Nothing listens at a free port (refused); a name under .invalid is never looked up (RFC 6761).
DEAD_PORT, NO_SUCH_NAME = "refused", "lookup"


def _offline_env(tmp_path: Path, how: str) -> dict[str, str]:
    endpoint = (
        f"http://127.0.0.1:{free_port()}"
        if how == DEAD_PORT
        else "https://hub.roundhouse-test.invalid"
    )
    return {
        **keyring_env(tmp_path),
        "HF_ENDPOINT": endpoint,
        "HF_HOME": str(tmp_path / "hf"),
        # No Ollama answers there: the library has nothing at all.
        "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
    }


@pytest.mark.parametrize(
    ("how", "first_words"),
    [
        (DEAD_PORT, "Hugging Face cannot be reached: search needs it."),
        (NO_SUCH_NAME, "No internet connection: search needs Hugging Face."),
    ],
)
def test_search_without_a_connection_says_so_at_once(
    ui: Ui, qloop: qasync.QEventLoop, home_root: Path, tmp_path: Path, how: str, first_words: str
) -> None:
    with running_daemon(home_root, env=_offline_env(tmp_path, how)):

        async def scenario() -> None:
            ui.bridge.start()
            await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
            page = ui.window.show_page("Models")
            assert isinstance(page, ModelsPage)
            search = page.search
            # The page's first search fails: not after the 15 s deadline, and in words.
            await wait_until(search.notice.isVisible, 5, "the offline notice")
            search.query_edit.setText("qwen")
            started = time.monotonic()
            search.search_button.click()
            await wait_until(lambda: not search.busy, 5, "the search's answer")
            assert time.monotonic() - started < 2.0 * WAIT_SLACK
            text = search.notice.text()
            assert text.startswith(first_words), text
            assert "Import a model file or add a models folder instead" in text
            assert "Errno" not in text and "within" not in text
            # The notice style, not the grey hint line.
            assert search.notice.objectName() == "notice"
            assert search.notice.property("tone") == "problem"
            assert search.status_label.text() == ""
            assert search.import_button.isVisible() and search.folder_button.isVisible()

            # Its Import button leads to the Library's own import.
            search.import_button.click()
            assert page.tabs.currentIndex() == LIBRARY_TAB
            dialog = page.library.file_dialog
            assert dialog is not None and dialog.windowTitle() == "Import a GGUF file"
            dialog.reject()

        try:
            qloop.run_until_complete(scenario())
        finally:
            close_bridge(qloop, ui.bridge)


def test_the_empty_library_says_how_to_add_models_and_a_folder_added_is_listed(
    ui: Ui, qloop: qasync.QEventLoop, home_root: Path, tmp_path: Path, tiny_gguf: Path
) -> None:
    with running_daemon(home_root, env=_offline_env(tmp_path, DEAD_PORT)) as daemon:

        async def scenario() -> None:
            ui.bridge.start()
            await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
            page = ui.window.show_page("Models")
            assert isinstance(page, ModelsPage)
            page.show_tab(LIBRARY_TAB)
            library = page.library
            hint = library.empty_hint
            await wait_until(lambda: library.listed is not None, 20, "the library listed")
            assert library.listed is not None and not library.listed.models
            assert hint.isVisible() and hint.text() == EMPTY_TEXT
            for button in (hint.import_button, hint.folder_button, hint.search_button):
                assert button.isVisible() and button.isEnabled()

            hint.search_button.click()
            assert page.tabs.currentIndex() == SEARCH_TAB
            page.show_tab(LIBRARY_TAB)
            hint.import_button.click()
            assert library.file_dialog is not None
            library.file_dialog.reject()

            # A folder, chosen in the folder dialog: saved in the settings, its model listed.
            hint.folder_button.click()
            chooser = hint.folder_dialog
            assert chooser is not None
            chooser.fileSelected.emit(str(tiny_gguf.parent))
            chooser.reject()
            await wait_until(
                lambda: library.listed is not None and bool(library.listed.models),
                30,
                "the folder's model listed",
            )
            assert library.find_model(lambda m: m.path == str(tiny_gguf)) is not None
            assert not hint.isVisible()
            async with DaemonClient(daemon.url, daemon.token) as client:
                settings = await client.settings()
            assert settings.models.library_folders == [str(tiny_gguf.parent)]

        try:
            qloop.run_until_complete(scenario())
        finally:
            close_bridge(qloop, ui.bridge)
