"""The Settings page's places, port, token and updates against a real daemon: the models
folder with its free space, refused in words where it does not exist; a library folder added
and saved; the control port refused while another program holds it, and saved for the next
start; the Hugging Face token set, shown by whose it is and forgotten (local Hub stand-in,
file keyring); the update check off by default with no request made, Check now against a
local PyPI stand-in, and the status bar's note."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtWidgets import QMessageBox

from roundhouse import __version__
from roundhouse.api.hub import HubTokenSource
from roundhouse.api.settings import Settings
from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.settings_page import SettingsPage
from tests.daemon_process import DaemonProcess, running_daemon
from tests.fakes.hub import HubStandin, hub_env
from tests.fakes.hub.build import ACCESS_TOKEN
from tests.fakes.pypi import PypiStandin
from tests.gui.conftest import close_bridge, wait_until
from tests.processes import free_port
from tests.support.standins import keyring_env


@pytest.fixture
def pypi() -> Iterator[PypiStandin]:
    with PypiStandin("99.1.0") as standin:
        yield standin


@pytest.fixture
def settings_daemon(
    home_root: Path, tmp_path: Path, fake_hub: HubStandin, pypi: PypiStandin
) -> Iterator[DaemonProcess]:
    env = {
        **hub_env(fake_hub),
        **keyring_env(tmp_path),
        "HF_HOME": str(tmp_path / "hf"),
        "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
        "ROUNDHOUSE_UPDATES_URL": pypi.url,
    }
    with running_daemon(home_root, env=env) as process:
        yield process


def _confirm(box: QMessageBox | None, action: str) -> None:
    assert box is not None
    next(b for b in box.buttons() if b.text() == action).click()


async def _save(page: SettingsPage) -> None:
    assert page.save_button.isEnabled(), "something to save"
    page.save_button.click()
    await wait_until(
        lambda: page.message.text().startswith("Saved") or bool(page.error_text()), 10, "the save"
    )


def test_places_port_token_and_updates(
    ui: Ui,
    qloop: qasync.QEventLoop,
    settings_daemon: DaemonProcess,
    pypi: PypiStandin,
    tmp_path: Path,
) -> None:
    models_dir, library = tmp_path / "models", tmp_path / "more models"
    models_dir.mkdir()
    library.mkdir()

    async def settings() -> Settings:
        async with DaemonClient(settings_daemon.url, settings_daemon.token) as client:
            return await client.settings()

    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        page = ui.window.show_page("Settings")
        assert isinstance(page, SettingsPage)
        await wait_until(lambda: page.settings is not None, 10, "the settings")

        # Where models live: the Hugging Face cache, with its free space.
        places = page.models
        assert places.models_dir.text() == "" and places.folders.paths() == []
        await wait_until(lambda: "free of" in places.space_text(), 10, "the free space")
        assert str(tmp_path / "hf" / "hub") in places.space_text()
        places.models_dir.setText(str(tmp_path / "missing"))
        await _save(page)
        assert "does not exist" in page.error_text() and "Create the folder" in page.error_text()
        places.models_dir.setText(str(models_dir))
        await wait_until(
            lambda: places.disk is not None and places.disk.path == str(models_dir), 10, "space"
        )
        assert "free of" in places.space_text() and "Hugging Face cache" not in places.space_text()
        places.folders.edit.setText(str(library))
        places.folders.add_button.click()
        await _save(page)
        assert page.message.text() == "Saved.", page.error_text()
        saved = await settings()
        assert saved.models_dir == str(models_dir)
        assert saved.models.library_folders == [str(library)]

        # The control port: refused while another program holds it, saved for the next start.
        assert page.daemon.port.value() == 11500
        assert settings_daemon.url in page.daemon.serving.text()
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", 0))
            holder.listen(1)
            page.daemon.port.setValue(holder.getsockname()[1])
            await _save(page)
        assert "is already taken" in page.error_text() and f"pid {os.getpid()}" in page.error_text()
        port = free_port()
        page.daemon.port.setValue(port)
        await _save(page)
        assert page.message.text() == "Saved; the control port changes when the daemon starts next."
        assert saved.daemon.port != port and (await settings()).daemon.port == port

        # The Hugging Face token: set, whose it is, never shown again, forgotten.
        token = page.hub_token
        await wait_until(lambda: "No Hugging Face token" in token.state_text(), 20, "the token")
        assert not token.forget_button.isEnabled() and not token.save_button.isEnabled()
        token.token_edit.setText("hf_notATokenTheHubKnows")
        token.save_button.click()
        await wait_until(lambda: bool(token.error_text()), 20, "the refusal")
        assert "refused the token (HTTP 401)" in token.error_text()
        assert token.token_edit.text() == "hf_notATokenTheHubKnows", "a refused one stays typed"
        token.token_edit.setText(ACCESS_TOKEN)
        token.save_button.click()
        await wait_until(lambda: "signed in as" in token.state_text(), 20, "the check")
        assert "roundhouse-tester" in token.state_text() and not token.error_text()
        assert token.token_edit.text() == "" and token.forget_button.isEnabled()
        assert token.save_button.text() == "Replace token"
        async with DaemonClient(settings_daemon.url, settings_daemon.token) as client:
            kept = await client.hub_token_status()
        assert kept.present and kept.source == HubTokenSource.KEYRING
        assert ACCESS_TOKEN not in kept.model_dump_json(), "the token never comes back"
        token.forget_button.click()
        _confirm(token.confirm_box, "Forget token")
        await wait_until(lambda: "No Hugging Face token" in token.state_text(), 10, "forgotten")
        assert not token.forget_button.isEnabled()

        # Updates: off by default, and nothing was asked of PyPI.
        updates = page.updates
        assert not updates.check_daily.isChecked()
        await wait_until(lambda: updates.status is not None, 10, "the update status")
        assert updates.result_text() == "Not checked yet." and pypi.requests() == []
        assert ui.window.update_notice.isHidden()
        updates.check_button.click()
        await wait_until(lambda: "is out" in updates.result_text(), 10, "the check")
        assert f"Roundhouse 99.1.0 is out (this is {__version__})" in updates.result_text()
        assert "pypi.org/project/roundhouse" in updates.result_text()
        assert len(pypi.requests()) == 1
        ui.window.update_notice.refresh()
        await wait_until(lambda: not ui.window.update_notice.isHidden(), 10, "the note")
        assert "Roundhouse 99.1.0 is out" in ui.window.update_notice.text()
        # Turned on after today's check: saved, and the daemon does not ask again today.
        updates.check_daily.setChecked(True)
        await _save(page)
        assert page.message.text() == "Saved." and (await settings()).ui.check_updates
        await wait_until(lambda: updates.status is not None and updates.status.enabled, 10, "on")
        assert len(pypi.requests()) == 1

        # A failure says why, in words, and keeps what was known.
        pypi.answer = "no-version"
        updates.check_button.click()
        await wait_until(lambda: "failed" in updates.result_text(), 10, "the failure")
        assert "without a version" in updates.result_text() and "99.1.0" in updates.result_text()
        assert not page.changed() and not page.save_button.isEnabled()

    try:
        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, ui.bridge)
