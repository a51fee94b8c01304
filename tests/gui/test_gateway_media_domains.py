"""The Settings page's "Media from these hosts" against a real daemon: saved in one spelling,
and a URL where a host name belongs refused in words, nothing saved."""

from __future__ import annotations

import qasync

from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from tests.daemon_process import DaemonProcess
from tests.gui.conftest import open_gateway_settings, wait_until


async def _saved(daemon: DaemonProcess) -> list[str]:
    async with DaemonClient(daemon.url, daemon.token) as client:
        return (await client.settings()).gateway.media_domains


def test_media_hosts_are_saved_and_a_url_is_refused(
    ui: Ui, qloop: qasync.QEventLoop, daemon: DaemonProcess
) -> None:
    async def scenario() -> None:
        page, section = await open_gateway_settings(ui)
        assert section.media_domains.text() == ""

        section.media_domains.setText("Upload.Wikimedia.org, images.example.com")
        page.save_button.click()
        await wait_until(lambda: page.message.text().startswith("Saved"), 10, "the save")
        assert await _saved(daemon) == ["upload.wikimedia.org", "images.example.com"]

        section.media_domains.setText("https://evil.net/")
        page.save_button.click()
        await wait_until(lambda: bool(page.error_text()), 10, "the refusal")
        assert "is not a host name" in page.error_text()
        assert "e.g. upload.wikimedia.org" in page.error_text()
        assert await _saved(daemon) == ["upload.wikimedia.org", "images.example.com"]

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
