"""The Settings page against a real daemon: the engine settings read, changed, saved and read
back; a value the daemon refuses is shown in words; Revert shows the daemon's again. Also the
Ollama page without any Ollama, and the pages' order."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QScrollArea, QWidget

from roundhouse.api.settings import LeftoverAction
from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.dialogs.builds_dialog import BuildsDialog
from roundhouse.gui.pages.ollama_page import OllamaPage
from roundhouse.gui.pages.settings_page import SettingsPage
from tests.daemon_process import DaemonProcess, running_daemon
from tests.gui.conftest import open_gateway_settings, wait_until
from tests.processes import free_port


@pytest.fixture
def no_ollama_daemon(home_root: Path) -> Iterator[DaemonProcess]:
    with running_daemon(home_root, env={"OLLAMA_HOST": f"127.0.0.1:{free_port()}"}) as process:
        yield process


def test_pages_in_order(ui: Ui) -> None:
    nav = ui.window.navigation
    titles = [nav.item(row).text() for row in range(nav.count())]
    pages = ["Hardware", "Engines", "Models", "Ollama", "Chat", "Benchmark", "Monitor", "Machines"]
    assert titles == [*pages, "Settings"]


def test_settings_round_trip_a_refusal_and_ollama_absent(
    ui: Ui, qloop: qasync.QEventLoop, no_ollama_daemon: DaemonProcess
) -> None:
    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")

        # No Ollama answers: the page says so, how to start one, and looks again; no dialog.
        ollama = ui.window.show_page("Ollama")
        assert isinstance(ollama, OllamaPage)
        await wait_until(lambda: ollama.absent, 10, "the page to say so")
        assert ollama.absent_view.title.text() == "Ollama is not running"
        assert "ollama serve" in ollama.absent_view.detail.text()
        assert ollama.absent_view.retry_button.isEnabled()
        await wait_until(lambda: ui.bridge.engines is not None, 20, "the engines")
        assert ollama.installer_url() == "https://ollama.com/download/linux"

        page = ui.window.show_page("Settings")
        assert isinstance(page, SettingsPage)
        await wait_until(lambda: page.settings is not None, 10, "the settings")
        engines = page.engines
        assert engines.ready_timeout.value() == 600 and engines.pythons.paths() == []
        assert engines.leftover.currentData() == LeftoverAction.ADOPT
        assert "keep serving" in engines.leftover_help.text(), engines.leftover_help.text()
        assert (engines.ready_timeout.minimum(), engines.ready_timeout.maximum()) == (5, 7200)
        assert not page.save_button.isEnabled(), "nothing changed yet"

        # Another window (the tray) picks the active model after the page read the settings:
        # the page's Save must keep it.
        async with DaemonClient(no_ollama_daemon.url, no_ollama_daemon.token) as client:
            current = await client.settings()
            chat = current.chat.model_copy(update={"active_model": "picked-in-the-tray"})
            await client.put_settings(current.model_copy(update={"chat": chat}))

        engines.pythons.edit.setText(sys.executable)
        engines.pythons.add_button.click()
        engines.leftover.setCurrentIndex(engines.leftover.findData(LeftoverAction.REAP.value))
        assert "stopped when the daemon starts" in engines.leftover_help.text()
        engines.ready_timeout.setValue(120)
        assert page.save_button.isEnabled()
        detected = ui.bridge.engines
        assert detected is not None
        page.save_button.click()
        await wait_until(lambda: page.message.text().startswith("Saved"), 10, "the save")
        assert page.message.text() == "Saved; looking for engines in the Pythons again."
        # The daemon looked again as it saved them; the change feed brought what it found.
        await wait_until(
            lambda: (
                ui.bridge.engines is not None
                and ui.bridge.engines.detected_at > detected.detected_at
            ),
            30,
            "the engines detected again, by the feed",
        )
        assert not page.save_button.isEnabled()
        async with DaemonClient(no_ollama_daemon.url, no_ollama_daemon.token) as client:
            saved = (await client.settings()).engines
            assert (await client.settings()).chat.active_model == "picked-in-the-tray"
        assert saved.python_paths == [sys.executable]
        assert saved.on_leftover == LeftoverAction.REAP and saved.ready_timeout_s == 120

        # The daemon validates: a value out of its range is refused in words.
        engines.ready_timeout.setRange(1, 100_000)
        engines.ready_timeout.setValue(1)
        page.save_button.click()
        await wait_until(lambda: bool(page.error_text()), 10, "the refusal")
        assert "ready_timeout_s" in page.error_text() and "5" in page.error_text()
        page.revert_button.click()
        await wait_until(lambda: engines.ready_timeout.value() == 120, 10, "the revert")
        assert not page.error_text()

        engines.pythons.list.setCurrentRow(0)
        engines.pythons.remove_button.click()
        assert engines.pythons.paths() == [] and page.save_button.isEnabled()
        ui.window.show_page("Ollama")
        await asyncio.sleep(0.1)
        assert ollama.absent

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())


def _turn_wheel(widget: QWidget, notches: int) -> None:
    """One wheel turn over the middle of `widget`, as the pointer would send it."""
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(
        centre,
        QPointF(widget.mapToGlobal(centre.toPoint())),
        QPoint(0, 0),
        QPoint(0, 120 * notches),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


def test_the_wheel_scrolls_the_page_not_the_fields(
    ui: Ui, qloop: qasync.QEventLoop, no_ollama_daemon: DaemonProcess
) -> None:
    async def scenario() -> None:
        page, gateway = await open_gateway_settings(ui)
        await wait_until(lambda: page.settings is not None, 10, "the settings")
        assert not page.save_button.isEnabled()
        ui.window.resize(900, 500)  # taller sections than the window: the page scrolls
        await asyncio.sleep(0.2)
        scroll = page.findChild(QScrollArea)
        assert scroll is not None and scroll.verticalScrollBar().maximum() > 0
        bar = scroll.verticalScrollBar()
        spin, combo = gateway.queue_timeout, page.engines.leftover
        wait, leftover = spin.value(), combo.currentIndex()
        # Neither takes the focus from the wheel: only a click or Tab gives it.
        assert spin.focusPolicy() == combo.focusPolicy() == Qt.FocusPolicy.StrongFocus
        assert not spin.hasFocus() and not combo.hasFocus()

        bar.setValue(0)
        _turn_wheel(spin, -3)
        assert spin.value() == wait, "the queue wait moved under the wheel"
        assert bar.value() > 0, "the page did not scroll"
        scrolled = bar.value()
        _turn_wheel(combo, -1)
        _turn_wheel(combo, 1)
        _turn_wheel(combo, 1)
        assert combo.currentIndex() == leftover, "the leftover choice moved under the wheel"
        assert bar.value() != scrolled
        await asyncio.sleep(0.1)
        assert not page.save_button.isEnabled(), "nothing changed, nothing to save"

        # Focused (clicked or tabbed into), the wheel steps the value as Qt's fields do.
        ui.window.activateWindow()
        spin.setFocus()
        await wait_until(spin.hasFocus, 5, "the spin box's focus")
        _turn_wheel(spin, 1)
        assert spin.value() != wait
        assert page.save_button.isEnabled()

        # A dialog is guarded by the same filter: the build dialog's backend list.
        dialog = BuildsDialog(ui.bridge, ui.window)
        dialog.show()
        backend = dialog.backend_combo
        assert backend.count() > 1 and not backend.hasFocus()
        chosen = backend.currentIndex()
        for notches in (-1, 1, -2):
            _turn_wheel(backend, notches)
        assert backend.currentIndex() == chosen
        dialog.close()
        dialog.deleteLater()

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
