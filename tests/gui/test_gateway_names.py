"""The Settings page's aliases and default model against a real daemon: added in the table,
saved with the page, shown again, an alias of an alias refused in words with nothing saved,
and removed."""

from __future__ import annotations

import qasync

from roundhouse.api.settings import GatewaySettings
from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from tests.daemon_process import DaemonProcess
from tests.gui.conftest import open_gateway_settings, wait_until


async def _saved(daemon: DaemonProcess) -> GatewaySettings:
    async with DaemonClient(daemon.url, daemon.token) as client:
        return (await client.settings()).gateway


def test_aliases_and_the_default_model_are_saved_and_checked(
    ui: Ui, qloop: qasync.QEventLoop, daemon: DaemonProcess
) -> None:
    async def scenario() -> None:
        page, section = await open_gateway_settings(ui)
        names = section.names
        assert names.table.rowCount() == 0 and names.default_model.text() == ""
        assert not names.remove_button.isEnabled()

        names.add_button.click()
        names.table.item(0, 0).setText("claude-sonnet-4-5")
        names.table.item(0, 1).setText("qwen3-coder-30b")
        names.default_model.setText("qwen3-coder-30b")
        assert page.save_button.isEnabled()
        page.save_button.click()
        await wait_until(lambda: page.message.text().startswith("Saved"), 10, "the save")
        saved = await _saved(daemon)
        assert saved.aliases == {"claude-sonnet-4-5": "qwen3-coder-30b"}
        assert saved.default_model == "qwen3-coder-30b"

        # An alias pointing at another alias is refused in words; nothing is saved.
        names.add_button.click()
        names.table.item(1, 0).setText("gpt-4o")
        names.table.item(1, 1).setText("claude-sonnet-4-5")
        page.save_button.click()
        await wait_until(lambda: bool(page.error_text()), 10, "the refusal")
        assert "which is an alias itself" in page.error_text()
        assert (await _saved(daemon)).aliases == {"claude-sonnet-4-5": "qwen3-coder-30b"}

        # Removed, and the default cleared: saved as none.
        names.table.selectRow(1)
        names.remove_button.click()
        names.table.selectRow(0)
        names.remove_button.click()
        assert names.table.rowCount() == 0
        names.default_model.setText("")
        page.save_button.click()
        await wait_until(lambda: page.message.text().startswith("Saved"), 10, "the second save")
        saved = await _saved(daemon)
        assert saved.aliases == {} and saved.default_model is None

        # What the daemon holds is what the page shows when read again.
        names.show_names({"a": "b"}, "b")
        assert names.aliases() == {"a": "b"} and names.default() == "b"

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
