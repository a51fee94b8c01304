"""The first-run guide driven end to end against a real daemon, the real llama-server and the
Hub stand-in serving the starters under the catalog's own names: shown on the first launch,
the recommended starter downloaded with progress (paused and resumed), started, a reply
streamed, the guide marked done; skipped from the Help menu and not shown again; offline
with only the library's model; a missing engine installed; a dead daemon said in words."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtWidgets import QApplication, QWizard

from roundhouse.api.downloads import DownloadState
from roundhouse.api.engines import EngineId
from roundhouse.api.settings import Settings
from roundhouse.api.starters import EngineSetupState, OptionKind
from roundhouse.base.paths import resolve_home
from roundhouse.client import DaemonClient
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


def test_offline_offers_only_the_library_and_still_reaches_a_reply(
    first_ui: Ui,
    qloop: qasync.QEventLoop,
    home_root: Path,
    env: dict[str, str],
    tiny_gguf: Path,
) -> None:
    # No Hub answers, and the library has one folder with the tiny model in it.
    offline = {**env, "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    config = home_root / "config"
    config.mkdir()
    folder = tiny_gguf.parent.as_posix()
    (config / "settings.toml").write_text(
        f'[models]\nlibrary_folders = ["{folder}"]\n', encoding="utf-8"
    )
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
            assert model.status.text().startswith("Offline: Cannot reach Hugging Face")
            shown = model.shown_ids()
            assert len(shown) == 1 and shown[0].startswith("library:")
            option = model.selected()
            assert option is not None and option.kind == OptionKind.LIBRARY
            assert option.model == str(tiny_gguf)
            assert model.isComplete() and not model.download_button.isVisible()
            wizard.next()
            await _chat_and_finish(wizard, daemon)

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
