"""Without a daemon the window shows the banner and stays responsive; Start starts one."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import qasync
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from roundhouse.api.discovery import read_discovery
from roundhouse.base.paths import resolve_home
from roundhouse.gui.app import build_ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.hardware_page import HardwarePage
from tests.gui.conftest import wait_until


async def _timer_latency_s() -> float:
    """How long a 10 ms Qt timer takes to fire: a frozen window would take seconds."""
    fired = asyncio.get_running_loop().create_future()
    started = time.monotonic()
    QTimer.singleShot(10, lambda: fired.set_result(time.monotonic()))
    return await asyncio.wait_for(fired, 5) - started


def test_banner_offers_retry_and_start_and_start_connects(
    qapp: QApplication, qloop: qasync.QEventLoop, spawn_home: Path
) -> None:
    home = resolve_home(spawn_home)
    ui = build_ui(qapp, home, auto_start=False, tray_available=False)
    qapp.setQuitOnLastWindowClosed(False)
    banner = ui.window.banner
    page = ui.window.show_page("Hardware")
    assert isinstance(page, HardwarePage)
    ui.window.show()

    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(banner.isVisible, 10, "the banner")
        assert "Not connected to the Roundhouse daemon" in banner.message_label.text()
        assert banner.retry_button.isEnabled() and banner.start_button.isEnabled()
        assert ui.window.connection_label.text() == "Not connected to the daemon"
        assert not page.refresh_button.isEnabled()
        # Auto-start is off: nothing may have been started behind the user's back.
        assert read_discovery(home.discovery_file) is None
        assert await _timer_latency_s() < 0.5

        banner.retry_button.click()
        await wait_until(lambda: ui.bridge.state == ConnectionState.DISCONNECTED, 10)
        assert banner.isVisible() and banner.retry_button.isEnabled()
        assert await _timer_latency_s() < 0.5

        banner.start_button.click()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 40, "the start")
        assert banner.isHidden()
        assert read_discovery(home.discovery_file) is not None
        await wait_until(lambda: page.charts.point_count() > 0, 10, "samples")

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
        ui.window.deleteLater()
