"""The main window against a real daemon: inventory, history, live samples, reconnection."""

from __future__ import annotations

import asyncio

import psutil
import qasync
from PySide6.QtWidgets import QApplication

from roundhouse.base.units import format_bytes
from roundhouse.gui.app import Ui, build_ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.hardware_page import HardwarePage
from tests.daemon_process import DaemonProcess, start_daemon
from tests.gui.conftest import wait_until


def _hardware_page(ui: Ui) -> HardwarePage:
    page = ui.window.show_page("Hardware")
    assert isinstance(page, HardwarePage)
    return page


def test_window_shows_inventory_history_and_live_samples(
    qapp: QApplication, qloop: qasync.QEventLoop, daemon: DaemonProcess
) -> None:
    ui = build_ui(qapp, daemon.home, auto_start=False, tray_available=True)
    qapp.setQuitOnLastWindowClosed(False)
    page = _hardware_page(ui)
    ui.window.show()

    async def scenario() -> None:
        # Let the daemon's 1 Hz sampler build some history before the window connects.
        await asyncio.sleep(3.2)
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, what="connected")
        await wait_until(lambda: page.charts.point_count() > 0, 5, "the first repaint")
        # Filled from the history at once, not one point per second from the stream.
        assert page.charts.point_count() >= 3

        system, memory = page.inventory_view.system, page.inventory_view.memory
        assert f"{psutil.cpu_count(logical=True)} logical" in (system.value("Cores") or "")
        assert system.value("Processor") not in (None, "", "Waiting for the daemon…")
        ram_total = format_bytes(psutil.virtual_memory().total)
        assert memory.value("RAM") == f"{ram_total} total"
        await wait_until(lambda: memory.value("RAM in use") is not None, 5, "live RAM")
        assert (memory.value("RAM in use") or "").endswith("%)")
        assert (system.value("CPU load") or "").endswith("%")
        assert page.inventory_view.engines.text().count("<p") >= 1

        before = page.charts.point_count()
        await wait_until(lambda: page.charts.point_count() >= before + 2, 8, "live samples")

        assert ui.window.banner.isHidden()
        assert "Connected to the Roundhouse daemon" in ui.window.connection_label.text()
        assert ui.tray is not None
        ui.tray.menu.aboutToShow.emit()
        texts = [a.text() for a in ui.tray.menu.actions() if not a.isSeparator()]
        # The serving menu itself is tested in test_tray_serving.py; engines other tests run
        # on this machine may be listed here too.
        assert texts[0] == "Roundhouse: connected to the daemon"
        assert texts[-3:] == [
            "Keep serving when windows close",
            "Start at login",
            "Quit Roundhouse…",
        ]
        assert ui.tray.icon.toolTip().startswith(("Roundhouse: connected", "Roundhouse: serving"))

        page.refresh_button.click()
        assert not page.refresh_button.isEnabled()
        await wait_until(page.refresh_button.isEnabled, 15, "the refreshed inventory")
        assert page.status_label.text().startswith("Inventory taken at")

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
        ui.window.deleteLater()


def test_samples_resume_after_the_daemon_restarts(
    qapp: QApplication, qloop: qasync.QEventLoop, daemon: DaemonProcess
) -> None:
    ui = build_ui(qapp, daemon.home, auto_start=False, tray_available=False)
    qapp.setQuitOnLastWindowClosed(False)
    page = _hardware_page(ui)
    ui.window.show()
    events: list[str] = []
    ui.bridge.connected.connect(lambda: events.append("connected"))
    ui.bridge.disconnected.connect(lambda message: events.append("disconnected"))
    root = daemon.home.root
    assert root is not None
    replacement: list[DaemonProcess] = []

    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, what="connected")
        await asyncio.to_thread(daemon.stop)
        await wait_until(lambda: "disconnected" in events, 10, "the loss to be noticed")
        await wait_until(lambda: not ui.window.banner.isHidden(), 5, "the banner")
        replacement.append(await asyncio.to_thread(start_daemon, root))
        await wait_until(lambda: events.count("connected") == 2, 20, "the reconnection")
        assert ui.window.banner.isHidden()
        before = page.charts.point_count()
        await wait_until(lambda: page.charts.point_count() > before, 8, "samples after restart")

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
        ui.window.deleteLater()
        for process in replacement:
            process.stop()
