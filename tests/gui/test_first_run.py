"""The first-run guide driven end to end against a real daemon, the real llama-server and the
Hub stand-in serving the starters under the catalog's own names: shown on the first launch,
the recommended starter downloaded with progress (paused and resumed), started, a reply
streamed, the guide marked done; skipped from the Help menu and not shown again; offline
with the library's model first and the bundled starters after it, or with nothing here and
a model file imported; a missing engine installed; a dead daemon said in words."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtWidgets import QApplication, QLabel, QWizard

from roundhouse.api.downloads import DownloadState
from roundhouse.api.engines import EngineId
from roundhouse.api.settings import Settings
from roundhouse.api.starters import EngineSetupState, OptionKind
from roundhouse.base.paths import resolve_home
from roundhouse.base.units import format_bytes
from roundhouse.client import DaemonClient
from roundhouse.core.guide.catalog import load_starters
from roundhouse.gui.app import Ui, build_ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.first_run.wizard import FirstRunWizard
from tests.daemon_process import DaemonProcess, running_daemon
from tests.fakes.hub import HubStandin
from tests.fakes.hub.starter_repos import starter_env, starter_gguf_repos, starter_hub
from tests.fakes.releases.server import ReleaseServer
from tests.gui.conftest import close_bridge, wait_until
from tests.processes import free_port

# starter_hub is a session fixture: imported so that pytest finds it for this module.
__all__ = ["starter_hub"]
LARGEST_FILE = starter_gguf_repos()[-1][1]
READY_S = 60.0


@pytest.fixture
def env(starter_hub: HubStandin, llama_server_binary: Path, tmp_path: Path) -> dict[str, str]:
    return starter_env(starter_hub, llama_server_binary, tmp_path)


def _ui(qapp: QApplication, home_root: Path, *, first_run: bool) -> Ui:
    built = build_ui(
        qapp,
        resolve_home(home_root),
        auto_start=False,
        tray_available=False,
        first_run_guide=first_run,
    )
    assert built.first_run is not None
    built.first_run._ctx_size = 512  # small and quick: the tiny model needs no more
    built.first_run._max_tokens = 8
    built.window.show()
    return built


@pytest.fixture
def first_ui(qapp: QApplication, home_root: Path) -> Iterator[Ui]:
    """The app as launched for real: the guide opens by itself when it was never done."""
    built = _ui(qapp, home_root, first_run=True)
    yield built
    if built.first_run and built.first_run.wizard:
        built.first_run.wizard.deleteLater()
    built.window.deleteLater()


async def _connect(ui: Ui) -> None:
    ui.bridge.start()
    await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")


async def _opened(ui: Ui) -> FirstRunWizard:
    launcher = ui.first_run
    assert launcher is not None
    await wait_until(
        lambda: launcher.wizard is not None and launcher.wizard.isVisible(), 10, "the guide"
    )
    assert launcher.wizard is not None
    return launcher.wizard


async def _settings(daemon: DaemonProcess) -> Settings:
    async with DaemonClient(daemon.url, daemon.token) as client:
        return await client.settings()


async def _chats(daemon: DaemonProcess) -> int:
    async with DaemonClient(daemon.url, daemon.token) as client:
        return len((await client.chats()).conversations)


async def _through_engine_step(wizard: FirstRunWizard) -> None:
    """Step 1 chose llama.cpp, found installed (on PATH); step 2 has nothing to do."""
    hardware = wizard.hardware
    await wait_until(lambda: wizard.state.guide is not None, 20, "the machine's guide")
    assert hardware.machine.text() and "RAM" in hardware.machine.text()
    assert wizard.state.engine is not None and wizard.state.engine.engine == EngineId.LLAMA_CPP
    assert wizard.state.engine.state == EngineSetupState.READY
    assert hardware.isComplete()
    wizard.next()
    assert wizard.currentPage() is wizard.engine
    await wait_until(wizard.engine.isComplete, 5, "the engine step")
    assert wizard.engine.status.text().startswith("✓ Ready")
    assert not wizard.engine.install_button.isVisible()
    wizard.next()


async def _chat_and_finish(wizard: FirstRunWizard, daemon: DaemonProcess) -> str:
    chat = wizard.chat
    assert wizard.currentPage() is chat
    await wait_until(lambda: wizard.state.served is not None, READY_S, "the model served")
    served = wizard.state.served
    assert served is not None and "serves it as" in chat.status.text()
    chat.prompt.setText("Say hello.")
    chat.send_button.click()
    await wait_until(lambda: chat.replies == 1, 60, "the reply")
    assert chat.reply_text(), "no text was streamed"
    assert "tokens" in chat.stats.text() and "llama.cpp" in chat.stats.text()
    # The exchange is kept as a conversation of the chat history.
    kept = chat.kept
    assert kept is not None
    await wait_until(lambda: kept.done, 10, "the exchange kept")
    assert kept.failure is None, kept.failure
    wizard.button(QWizard.WizardButton.FinishButton).click()
    assert not wizard.isVisible()
    finish = wizard.finish_call
    assert finish is not None
    await wait_until(lambda: finish.done, 10, "the settings saved")
    assert finish.failure is None, finish.failure
    settings = await _settings(daemon)
    assert settings.ui.first_run_done
    assert settings.chat.active_model == served.model
    assert await _chats(daemon) == 1
    return served.model


def test_first_launch_downloads_the_recommended_starter_and_chats(
    first_ui: Ui,
    qloop: qasync.QEventLoop,
    home_root: Path,
    env: dict[str, str],
    starter_hub: HubStandin,
) -> None:
    ui = first_ui
    with running_daemon(home_root, env=env) as daemon:

        async def scenario() -> None:
            await _connect(ui)
            wizard = await _opened(ui)
            await _through_engine_step(wizard)

            model = wizard.model
            assert wizard.currentPage() is model
            await wait_until(lambda: model.starters is not None, 30, "the starters")
            starters = model.starters
            assert starters is not None and starters.online
            assert starters.recommended == "llama-3.1-8b", starters.reason
            assert model.shown_ids() == [o.id for o in starters.options]
            option = model.selected()
            assert option is not None and option.id == "llama-3.1-8b" and not option.downloaded
            assert "from Hugging Face" in model.about.text() and "to download" in model.about.text()
            assert not model.isComplete() and model.download_button.isEnabled()

            # Slowed down, so the download can be seen and paused half way.
            starter_hub.set_faults({"repo": "*", "path": "*.gguf", "throttle_bps": 60_000})
            model.download_button.click()
            panel = model.panel
            await wait_until(lambda: len(panel.rows) == 1, 20, "the download's row")
            row = next(iter(panel.rows.values()))
            assert row.name_label.text() == LARGEST_FILE
            await wait_until(lambda: row.item.bytes_done > 60_000, 20, "progress")
            row.pause_button.click()
            await wait_until(lambda: row.item.state == DownloadState.PAUSED, 10, "the pause")
            assert not model.isComplete() and panel.running
            starter_hub.clear_faults()
            row.resume_button.click()
            await wait_until(model.isComplete, 30, "the download and the library")
            done = wizard.state.option
            assert done is not None and done.downloaded and done.model is not None
            assert Path(done.model).name == LARGEST_FILE
            assert await asyncio.to_thread(Path(done.model).is_file)
            assert not model.download_button.isVisible()
            wizard.next()

            served = await _chat_and_finish(wizard, daemon)
            assert served == LARGEST_FILE.removesuffix(".gguf")
            # "Open Roundhouse" brought the Chat page up.
            assert ui.window.navigation.currentItem().text() == "Chat"

        try:
            qloop.run_until_complete(scenario())
        finally:
            close_bridge(qloop, ui.bridge)


def test_skipped_from_the_help_menu_and_not_shown_again(
    qapp: QApplication, qloop: qasync.QEventLoop, home_root: Path, daemon: DaemonProcess
) -> None:
    ui = _ui(qapp, home_root, first_run=False)
    try:

        async def scenario() -> None:
            await _connect(ui)
            await asyncio.sleep(0.3)
            launcher = ui.first_run
            assert launcher is not None and launcher.wizard is None  # not asked to open
            guide = next(a for a in ui.window.help_menu.actions() if a.text() == "First-run guide…")
            guide.trigger()
            wizard = await _opened(ui)
            await wait_until(lambda: wizard.state.guide is not None, 20, "the guide")
            wizard.button(QWizard.WizardButton.CustomButton1).click()
            assert not wizard.isVisible()
            finish = wizard.finish_call
            assert finish is not None
            await wait_until(lambda: finish.done, 10, "the settings saved")
            settings = await _settings(daemon)
            assert settings.ui.first_run_done and settings.chat.active_model is None

        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, ui.bridge)
        ui.window.deleteLater()

    # The next launch connects and does not open the guide by itself.
    again = _ui(qapp, home_root, first_run=True)
    try:

        async def relaunch() -> None:
            await _connect(again)
            await asyncio.sleep(0.5)
            assert again.first_run is not None and again.first_run.wizard is None

        qloop.run_until_complete(relaunch())
    finally:
        close_bridge(qloop, again.bridge)
        again.window.deleteLater()


def _offline_env(env: dict[str, str], home_root: Path, folder: Path | None) -> dict[str, str]:
    """No Hub answers (nothing listens at its address); the library lists `folder` too."""
    if folder is not None:
        config = home_root / "config"
        config.mkdir()
        (config / "settings.toml").write_text(
            f'[models]\nlibrary_folders = ["{folder.as_posix()}"]\n', encoding="utf-8"
        )
    return {**env, "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"}


def _no_errno_anywhere(wizard: FirstRunWizard) -> None:
    """Every word the guide shows is a sentence: no errno numbers, no library's own text."""
    texts = [label.text() for label in wizard.findChildren(QLabel)]
    table = wizard.model.table
    for row in range(table.topLevelItemCount()):
        item = table.topLevelItem(row)
        assert item is not None
        texts += [item.text(column) for column in range(table.columnCount())]
    for text in texts:
        assert "Errno" not in text and "Name or service" not in text, text


def test_offline_lists_the_library_first_then_the_bundled_starters_and_reaches_a_reply(
    first_ui: Ui,
    qloop: qasync.QEventLoop,
    home_root: Path,
    env: dict[str, str],
    tiny_gguf: Path,
) -> None:
    offline = _offline_env(env, home_root, tiny_gguf.parent)
    ui = first_ui
    with running_daemon(home_root, env=offline) as daemon:

        async def scenario() -> None:
            await _connect(ui)
            wizard = await _opened(ui)
            await _through_engine_step(wizard)
            model = wizard.model
            await wait_until(lambda: model.starters is not None, 30, "the starters")
            starters = model.starters
            assert starters is not None and not starters.online
            assert model.status.text().startswith(
                "Offline: Hugging Face (127.0.0.1) refused the connection"
            ), model.status.text()
            # The model on this machine first, then every starter of the bundled catalog,
            # sized from it and marked as needing a download.
            shown = model.shown_ids()
            assert shown[0].startswith("library:")
            catalog = [s for s in load_starters().starter if s.gguf is not None]
            assert shown[1:] == [s.id for s in catalog]
            table = model.table
            for row, spec in enumerate(catalog, start=1):
                item = table.topLevelItem(row)
                assert item is not None and spec.gguf is not None
                assert item.text(0) == spec.title
                assert item.text(1) == format_bytes(spec.gguf.size_mb * 1000**2)
                assert item.text(3) == "needs a download (offline now)"
            # The recommended one, on this machine, is selected as promised; Next is offered.
            option = model.selected()
            assert option is not None and option.kind == OptionKind.LIBRARY
            assert option.id == starters.recommended
            assert option.model == str(tiny_gguf)
            assert model.status.text().endswith("the recommended one is selected.")
            assert model.isComplete() and not model.download_button.isVisible()
            assert wizard.button(QWizard.WizardButton.NextButton).isEnabled()
            assert model.import_button.isVisible() and model.import_button.isEnabled()
            assert model.import_button.text() == "Import a model file…"
            _no_errno_anywhere(wizard)
            # A starter that needs a download says so, and Next still leads on.
            assert model.select(shown[1])
            assert "needs a download" in model.about.text()
            assert not model.download_button.isEnabled()
            assert wizard.button(QWizard.WizardButton.NextButton).isEnabled()
            assert model.select(shown[0])
            wizard.next()
            await _chat_and_finish(wizard, daemon)

        try:
            qloop.run_until_complete(scenario())
        finally:
            close_bridge(qloop, ui.bridge)


def test_offline_with_nothing_here_a_model_file_is_imported_from_the_guide(
    first_ui: Ui,
    qloop: qasync.QEventLoop,
    home_root: Path,
    env: dict[str, str],
    tiny_gguf: Path,
) -> None:
    ui = first_ui
    with running_daemon(home_root, env=_offline_env(env, home_root, None)):

        async def scenario() -> None:
            await _connect(ui)
            wizard = await _opened(ui)
            await _through_engine_step(wizard)
            model = wizard.model
            await wait_until(lambda: model.starters is not None, 30, "the starters")
            starters = model.starters
            assert starters is not None and not starters.online
            assert starters.recommended is None
            # Nothing is on this machine: the starters are listed, the way on is the import.
            assert len(model.shown_ids()) == len(starters.options) > 0
            assert "import a model file" in model.status.text()
            assert "Import a model file" in model.reason.text()
            assert "Settings" not in model.reason.text()
            _no_errno_anywhere(wizard)
            # Next still leads on: the chat step says what to do instead of a dead end.
            next_button = wizard.button(QWizard.WizardButton.NextButton)
            assert next_button.isEnabled()

            # The Library's own import: its file dialog, then the daemon's import.
            model.import_button.click()
            dialog = model.file_dialog
            assert dialog is not None and dialog.windowTitle() == "Import a GGUF file"
            dialog.fileSelected.emit(str(tiny_gguf))
            dialog.reject()
            await wait_until(lambda: model.importing is None, 30, "the import")
            await wait_until(model.isComplete, 30, "the list read again")
            option = model.selected()
            assert option is not None and option.kind == OptionKind.LIBRARY, option
            assert option.downloaded and option.model is not None
            assert Path(option.model).name == tiny_gguf.name
            assert model.shown_ids()[0] == option.id
            assert not model.problem.isVisible()
            assert next_button.isEnabled()

        try:
            qloop.run_until_complete(scenario())
        finally:
            close_bridge(qloop, ui.bridge)


def test_a_dead_daemon_is_said_in_words_and_retried(
    qapp: QApplication, qloop: qasync.QEventLoop, home_root: Path
) -> None:
    ui = _ui(qapp, home_root, first_run=False)
    try:

        async def scenario() -> None:
            assert ui.first_run is not None
            wizard = ui.first_run.open()
            step = wizard.hardware
            await wait_until(step.problem.isVisible, 5, "the problem")
            assert step.problem.text().startswith("Could not look at this machine: Not connected")
            assert step.retry_button.isVisible() and not step.isComplete()
            step.retry_button.click()
            await wait_until(step.problem.isVisible, 5, "the problem again")
            wizard.close()
            assert wizard.finish_call is not None

        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, ui.bridge)
        if ui.first_run and ui.first_run.wizard:
            ui.first_run.wizard.deleteLater()
        ui.window.deleteLater()


@pytest.mark.skipif(sys.platform != "linux", reason="the fake llama.cpp builds are Linux scripts")
def test_a_missing_engine_is_installed_from_the_engine_step(
    first_ui: Ui,
    qloop: qasync.QEventLoop,
    home_root: Path,
    starter_hub: HubStandin,
    tmp_path: Path,
) -> None:
    ui = first_ui
    with ReleaseServer() as releases:
        env = {
            **starter_env(starter_hub, None, tmp_path),
            "ROUNDHOUSE_LLAMACPP_RELEASES_URL": releases.releases_url,
            # No llama-server on PATH: only what the install brings is found.
            "PATH": str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin",
        }
        with running_daemon(home_root, env=env):

            async def scenario() -> None:
                await _connect(ui)
                wizard = await _opened(ui)
                await wait_until(lambda: wizard.state.guide is not None, 20, "the guide")
                choice = wizard.state.engine
                assert choice is not None and choice.state == EngineSetupState.INSTALL
                wizard.next()
                step = wizard.engine
                assert step.install_button.isVisible() and not step.isComplete()
                assert step.cost.text().startswith("Roughly 38.1 MiB to download")
                step.install_button.click()
                await wait_until(lambda: step.install_view is not None, 5, "the install view")
                await wait_until(step.isComplete, 60, "the install")
                assert wizard.state.engine is not None
                assert wizard.state.engine.state == EngineSetupState.READY
                assert step.status.text().startswith("✓ Ready")
                assert not step.install_button.isVisible()

            try:
                qloop.run_until_complete(scenario())
            finally:
                close_bridge(qloop, ui.bridge)
