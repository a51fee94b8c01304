"""The Gateway section of the Settings page against a real daemon (keyring: the tests' file
backend): its settings saved with the page, the key generated (shown once, copied), the
second address listening with it, the key cleared after a confirmation, and a non-loopback
address refused without a key, in words."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import qasync
from PySide6.QtWidgets import QApplication, QMessageBox

from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from tests.daemon_process import DaemonProcess, running_daemon
from tests.gui.conftest import open_gateway_settings, wait_until
from tests.processes import free_port


@pytest.fixture
def keyed_daemon(home_root: Path, tmp_path: Path) -> Iterator[DaemonProcess]:
    env = {
        "PYTHON_KEYRING_BACKEND": "tests.fakes.keyring_backend.FileKeyring",
        "ROUNDHOUSE_TEST_KEYRING": str(tmp_path / "keyring.json"),
    }
    with running_daemon(home_root, env=env) as process:
        yield process


def _models(url: str, key: str | None) -> int:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return httpx.get(url + "/models", headers=headers, trust_env=False).status_code


def _confirm(box: QMessageBox | None, action: str) -> None:
    assert box is not None
    button = next(b for b in box.buttons() if b.text() == action)
    button.click()


def test_gateway_settings_key_and_listeners(
    ui: Ui, qloop: qasync.QEventLoop, keyed_daemon: DaemonProcess, qapp: QApplication
) -> None:
    async def scenario() -> None:
        page, section = await open_gateway_settings(ui)
        assert section.just_in_time.isChecked() and section.idle_ttl.value() == 3600
        assert section.listen_host.text() == "" and section.key_state.text() == "Not set"
        assert f"{keyed_daemon.url}/v1 (no key)" in section.listeners_text()
        assert not section.clear_button.isEnabled() and section.generate_button.isEnabled()
        assert section.new_key.isHidden()

        # A port another program holds is refused on save, in words, and nothing is saved.
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", 0))
            holder.listen(1)
            taken = holder.getsockname()[1]
            section.listen_host.setText("127.0.0.1")
            section.listen_port.setValue(taken)
            page.save_button.click()
            await wait_until(lambda: bool(page.error_text()), 10, "the refusal")
        assert f"Port {taken} on 127.0.0.1 is already taken" in page.error_text()
        async with DaemonClient(keyed_daemon.url, keyed_daemon.token) as client:
            assert (await client.settings()).gateway.listen_host is None

        # The settings are saved with the page; the second address starts listening.
        port = free_port()
        section.idle_ttl.setValue(600)
        section.max_resident.setValue(2)
        section.listen_host.setText("127.0.0.1")
        section.listen_port.setValue(port)
        section.cors_origins.setText("http://localhost:3000, http://app.example")
        assert section.pass_through.isChecked()
        section.pass_through.setChecked(False)
        assert page.save_button.isEnabled()
        page.save_button.click()
        await wait_until(lambda: page.message.text().startswith("Saved"), 10, "the save")
        async with DaemonClient(keyed_daemon.url, keyed_daemon.token) as client:
            saved = (await client.settings()).gateway
        assert saved.idle_ttl_s == 600 and saved.max_resident == 2
        assert (saved.listen_host, saved.listen_port) == ("127.0.0.1", port)
        assert saved.cors_origins == ["http://localhost:3000", "http://app.example"]
        assert saved.pass_through is False
        second = f"http://127.0.0.1:{port}/v1"
        await wait_until(lambda: second in section.listeners_text(), 10, "the second address")
        assert _models(second, None) == 200

        # Generated: shown once, copied, required by the second address at once.
        section.generate_button.click()
        await wait_until(lambda: section.new_key.isVisible(), 10, "the new key")
        key = section.new_key.text()
        assert key.startswith("rh-") and len(key) > 30
        section.copy_button.click()
        assert qapp.clipboard().text() == key
        await wait_until(lambda: section.key_state.text().startswith("Set"), 10, "key set")
        assert f"{second} (key required)" in section.listeners_text()
        assert _models(second, None) == 401 and _models(second, key) == 200

        # Generating again asks first; Cancel keeps the key.
        section.generate_button.click()
        await wait_until(lambda: section.confirm_box is not None, 5, "the question")
        _confirm(section.confirm_box, "Cancel")
        await wait_until(lambda: section.confirm_box is None, 5, "the answer")
        assert _models(second, key) == 200

        # Cleared after a confirmation: the key is gone, and so is its showing.
        section.clear_button.click()
        await wait_until(lambda: section.confirm_box is not None, 5, "the question")
        _confirm(section.confirm_box, "Clear key")
        await wait_until(lambda: section.key_state.text() == "Not set", 10, "the clearing")
        assert section.new_key.isHidden() and not section.clear_button.isEnabled()
        assert _models(second, None) == 200

        # Beyond loopback without a key: not listening, and the page says what to do.
        section.listen_host.setText("0.0.0.0")
        page.save_button.click()
        await wait_until(lambda: "gateway key --generate" in section.listeners_text(), 10, "why")
        assert "0.0.0.0" in section.listeners_text()
        assert not page.error_text() and not section.error.isVisible()

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
