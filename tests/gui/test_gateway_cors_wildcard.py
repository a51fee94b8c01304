"""The Settings page and `*` among the browser origins, against a real daemon: refused on save
while no key is set, in words, nothing saved; accepted once a key is; and the key's Clear
refused, in words, while `*` is listed."""

from __future__ import annotations

import qasync

from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from tests.daemon_process import DaemonProcess
from tests.gui.conftest import open_gateway_settings, wait_until
from tests.gui.test_gateway_settings import _confirm, keyed_daemon

__all__ = ["keyed_daemon"]  # the fixture, used by name below


async def _origins(daemon: DaemonProcess) -> list[str]:
    async with DaemonClient(daemon.url, daemon.token) as client:
        return (await client.settings()).gateway.cors_origins


def test_every_origin_needs_the_key_and_keeps_it(
    ui: Ui, qloop: qasync.QEventLoop, keyed_daemon: DaemonProcess
) -> None:
    async def scenario() -> None:
        page, section = await open_gateway_settings(ui)

        section.cors_origins.setText("*")
        page.save_button.click()
        await wait_until(lambda: bool(page.error_text()), 10, "the refusal")
        assert "lets every web page you open use the gateway" in page.error_text()
        assert "gateway key --generate" in page.error_text()
        assert await _origins(keyed_daemon) == []

        section.generate_button.click()
        await wait_until(lambda: section.key_state.text().startswith("Set"), 10, "key set")
        page.save_button.click()
        await wait_until(lambda: page.message.text().startswith("Saved"), 10, "the save")
        assert await _origins(keyed_daemon) == ["*"]

        section.clear_button.click()
        await wait_until(lambda: section.confirm_box is not None, 5, "the question")
        _confirm(section.confirm_box, "Clear key")
        await wait_until(lambda: section.error.isVisible(), 10, "the refusal")
        assert "The key was not cleared" in section.error.text()
        assert "Remove `*` first" in section.error.text()
        assert section.key_state.text().startswith("Set")

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
