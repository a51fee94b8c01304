"""The Settings page's Paired machines section against a real daemon: turning the peer
listener on saves it and it listens; Pair a machine… opens the pairing dialog."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync

from roundhouse.api.settings import Settings
from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.settings_page import SettingsPage
from tests.daemon_process import DaemonProcess, running_daemon
from tests.gui.conftest import close_bridge, wait_until
from tests.processes import free_port
from tests.support.standins import keyring_env


@pytest.fixture
def daemon(home_root: Path, tmp_path: Path) -> Iterator[DaemonProcess]:
    with running_daemon(home_root, env=keyring_env(tmp_path)) as process:
        yield process


def test_the_peer_listener_is_turned_on_from_the_page(
    ui: Ui, qloop: qasync.QEventLoop, daemon: DaemonProcess
) -> None:
    port = free_port()

    async def saved() -> Settings:
        async with DaemonClient(daemon.url, daemon.token) as client:
            return await client.settings()

    async def listener_url() -> str | None:
        async with DaemonClient(daemon.url, daemon.token) as client:
            return (await client.peers(check=False)).listener.url

    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        page = ui.window.show_page("Settings")
        assert isinstance(page, SettingsPage)
        await wait_until(lambda: page.settings is not None, 10, "the settings")
        section = page.peers
        assert section.listen_host.text() == "" and section.port.value() == 11502
        assert not section.discovery.isChecked()
        assert await listener_url() is None

        section.listen_host.setText("127.0.0.1")
        section.port.setValue(port)
        section.name.setText("desk")
        assert page.save_button.isEnabled()
        page.save_button.click()
        await wait_until(lambda: page.message.text() == "Saved.", 10, "the save")
        peers = (await saved()).peers
        assert (peers.listen_host, peers.port, peers.name) == ("127.0.0.1", port, "desk")
        assert await listener_url() == f"https://127.0.0.1:{port}"

        section.pair_button.click()
        dialog = section.dialog
        assert dialog is not None and dialog.isVisible()
        dialog.show_code_button.click()
        await wait_until(lambda: dialog.code_label.isVisible(), 10, "the code")
        assert len(dialog.code_label.text()) == 11
        assert "compare them" in dialog.code_details.text()
        dialog.close()

    try:
        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, ui.bridge)
