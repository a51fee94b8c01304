"""The Gateway section on a machine with no keyring (keyring's fail backend, as on a desktop
with no Secret Service): the generated key is kept in the daemon's 0600 secrets file, and
the section says so where it used to say "the keyring"."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync

from roundhouse.gui.app import Ui
from tests.daemon_process import DaemonProcess, running_daemon
from tests.gui.conftest import open_gateway_settings, wait_until


@pytest.fixture
def keyringless_daemon(home_root: Path) -> Iterator[DaemonProcess]:
    env = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    with running_daemon(home_root, env=env) as process:
        yield process


def test_a_key_generated_without_a_keyring_says_where_it_is_kept(
    ui: Ui, qloop: qasync.QEventLoop, keyringless_daemon: DaemonProcess
) -> None:
    secrets_file = keyringless_daemon.home.config_dir / "secrets.json"

    async def scenario() -> None:
        _, section = await open_gateway_settings(ui)
        assert section.key_state.text() == "Not set"
        section.generate_button.click()
        await wait_until(lambda: section.new_key.isVisible(), 10, "the new key")
        key = section.new_key.text()
        assert key.startswith("rh-")
        await wait_until(lambda: section.key_state.text().startswith("Set"), 10, "key set")
        assert str(secrets_file) in section.key_state.text()
        assert f"Roundhouse keeps it in {secrets_file}" in section.new_key_hint.text()
        assert "system keyring" not in section.new_key_hint.text()
        assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
        assert key in secrets_file.read_text(encoding="utf-8")

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
