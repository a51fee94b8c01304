"""Installing engines from the Engines page, against a real daemon: llama.cpp from the local
release server (progress with bytes, a corrupt download refused in words, then installed and
found), its Builds dialog (install another, use, remove, the current one asks), and mlx-lm
with real pip, offline, into an environment that is then removed."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QObject, QUrl, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QMessageBox

from roundhouse.api.engines import EngineId
from roundhouse.api.installs import InstallRequest, JobState
from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.dialogs.builds_dialog import CURRENT_MARK, BuildsDialog
from roundhouse.gui.pages.engines_page import EnginesPage
from tests.daemon_process import DaemonProcess, running_daemon
from tests.fakes.releases.server import ReleaseServer
from tests.gui.conftest import wait_until
from tests.unit.install.wheels import mlx_wheels_and_pins

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the fake builds are Linux")
ASSET = "llama-b6100-bin-ubuntu-x64.tar.gz"


@pytest.fixture
def releases() -> Iterator[ReleaseServer]:
    with ReleaseServer() as server:
        yield server


@pytest.fixture
def install_daemon(
    releases: ReleaseServer, home_root: Path, tmp_path: Path
) -> Iterator[DaemonProcess]:
    wheels, pins = mlx_wheels_and_pins(tmp_path)
    env = {
        "ROUNDHOUSE_LLAMACPP_RELEASES_URL": releases.releases_url,
        "ROUNDHOUSE_ENGINE_PINS": str(pins),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheels),
        # Nothing on PATH but Python: only what the installs bring is found.
        "PATH": str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin",
    }
    with running_daemon(home_root, env=env) as process:
        yield process


class UrlCatcher(QObject):
    """Takes the links the app opens, instead of a browser."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.urls.append(url.toString())


async def _connected(ui: Ui) -> EnginesPage:
    page = ui.window.show_page("Engines")
    assert isinstance(page, EnginesPage)
    ui.bridge.start()
    await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
    await wait_until(lambda: bool(page.cards), 20, "the engines")
    return page


def _current(dialog: BuildsDialog) -> str | None:
    """The tag the dialog marks as current."""
    marked = [row[0] for row in dialog.row_texts() if row[4] == CURRENT_MARK]
    return marked[0] if len(marked) == 1 else None


def test_llamacpp_install_with_progress_a_corrupt_download_and_the_builds_dialog(
    ui: Ui, qloop: qasync.QEventLoop, install_daemon: DaemonProcess, releases: ReleaseServer
) -> None:
    catcher = UrlCatcher()
    QDesktopServices.setUrlHandler("https", catcher, "open")

    async def scenario() -> None:
        page = await _connected(ui)
        card = page.card(EngineId.LLAMA_CPP)
        assert card.status_text().startswith("Not found")
        assert card.install_button.isVisible() and card.install_button.isEnabled()
        assert "Roundhouse can install an official llama.cpp" in card.hint.text()
        assert not card.start_button.isVisible()

        # Ollama installs itself: a link to its installer for this OS, and the hint.
        ollama = page.card(EngineId.OLLAMA)
        if ollama.status_text().startswith("Not found"):
            assert ollama.get_button.isVisible() and not ollama.install_button.isVisible()
            ollama.get_button.click()
            assert catcher.urls == ["https://ollama.com/download/linux"]
            assert "ollama.com" in ollama.hint.text()

        # A corrupt download: refused in words, nothing installed.
        releases.modes.corrupt.add(ASSET)
        card.install_button.click()
        view = card.install_view
        assert view.isVisible() and view.running and not card.install_button.isEnabled()
        await wait_until(lambda: view.error.isVisible(), 30, "the failure")
        assert "sha256" in view.error.text()
        assert view.job is not None and view.job.state == JobState.FAILED
        assert card.install_button.isEnabled(), "the user may try again"
        assert card.status_text().startswith("Not found")

        # Then a good one, slowly enough to watch: bytes, then found with its version.
        releases.modes.corrupt.clear()
        releases.modes.delay_per_chunk_s = 0.02
        card.install_button.click()
        await wait_until(lambda: " KiB/s" in view.stage.text(), 20, "download progress")
        assert " of " in view.stage.text() and view.bar.maximum() > 0
        assert view.cancel_button.isVisible()
        assert view.plan.isVisible() and "b6100" in view.plan.text()
        releases.modes.delay_per_chunk_s = 0.0
        await wait_until(lambda: "b6100" in card.status_text(), 30, "the new build found")
        assert card.status_text().startswith("Found:")
        # The engines and the job are two kinds of the change feed: the job's end may land
        # a moment after the card found the build.
        await wait_until(
            lambda: view.stage.text().startswith("Installed llama.cpp b6100"), 5, "the job's end"
        )
        assert view.stage.text().startswith("Installed llama.cpp b6100")
        assert not view.bar.isVisible() and not view.error.isVisible()
        assert card.start_button.isVisible() and not card.install_button.isVisible()

        # The builds: add b6000 (it becomes current), use b6100 again, remove both.
        card.builds_button.click()
        dialog = page.builds_dialog
        assert dialog is not None and dialog.isVisible()
        await wait_until(lambda: dialog.tags() == ["b6100"], 10, "the builds")
        assert _current(dialog) == "b6100"
        dialog.another_button.click()
        dialog.tag_edit.setText("b6000")
        dialog.install_button.click()
        await wait_until(lambda: sorted(dialog.tags()) == ["b6000", "b6100"], 30, "b6000")
        await wait_until(lambda: "b6000" in card.status_text(), 10, "the card to follow")
        assert dialog.select_tag("b6100")
        dialog.use_button.click()
        await wait_until(lambda: "b6100" in card.status_text(), 10, "the switch")
        await wait_until(lambda: _current(dialog) == "b6100", 5, "the list again")

        assert dialog.select_tag("b6000")
        dialog.remove_button.click()
        assert dialog.confirm_box is None, "another build goes without asking"
        await wait_until(lambda: dialog.tags() == ["b6100"], 10, "b6000 removed")

        assert dialog.select_tag("b6100")
        dialog.remove_button.click()
        box = dialog.confirm_box
        assert box is not None and "b6100" in box.text()
        box.button(QMessageBox.StandardButton.Cancel).click()
        assert dialog.tags() == ["b6100"]
        dialog.remove_button.click()
        box = dialog.confirm_box
        assert box is not None
        [remove] = [b for b in box.buttons() if b.text() == "Remove"]
        remove.click()
        await wait_until(lambda: dialog.tags() == [], 10, "the current build removed")
        await wait_until(lambda: card.status_text().startswith("Not found"), 10, "the card")
        dialog.reject()
        await wait_until(lambda: page.builds_dialog is None, 5, "the dialog to close")

    try:
        qloop.run_until_complete(scenario())
    finally:
        QDesktopServices.unsetUrlHandler("https")
        qloop.run_until_complete(ui.bridge.aclose())


def test_mlx_installs_with_pip_output_and_its_environment_is_removed(
    ui: Ui, qloop: qasync.QEventLoop, install_daemon: DaemonProcess
) -> None:
    async def scenario() -> None:
        # Started elsewhere (the CLI) before the app connects: the card follows it too.
        async with DaemonClient(install_daemon.url, install_daemon.token) as client:
            await client.install_engine("mlx", InstallRequest())
        page = await _connected(ui)
        card = page.card(EngineId.MLX)
        view = card.install_view
        await wait_until(lambda: view.running, 10, "the card to follow the install")
        await wait_until(view.output_button.isVisible, 30, "pip's output")
        assert "pip's output" in view.output_button.text()
        view.output_button.click()
        await wait_until(lambda: not view.running, 60, "the install")
        assert view.stage.text().startswith("Installed mlx-lm 0.0.1"), view.stage.text()
        # What was installed and what pip checked, in words.
        assert view.plan.text().startswith("Chosen: mlx-lm 0.0.1 as pinned by this release")
        assert "every file it downloads, dependencies included" in view.plan.text()
        assert any("Successfully installed" in line for line in view.output_lines())
        await wait_until(lambda: card.remove_env_button.isVisible(), 10, "the managed copy")
        assert not card.install_button.isVisible(), "found: nothing to install"
        assert "managed" in card.status_text() or "Roundhouse" in card.status_text()

        card.remove_env_button.click()
        box = card.confirm_box
        assert box is not None
        [remove] = [b for b in box.buttons() if b.text() == "Remove"]
        remove.click()
        await wait_until(lambda: not card.remove_env_button.isVisible(), 20, "the removal")
        assert card.note.text() == "Removed the environment."

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
