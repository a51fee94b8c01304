"""The notifier's rules, fed the bridge's signals as the change feed would (offscreen, no tray,
no session bus: the window's status bar): nothing while the window is on screen unless the
user chose "always", a kind turned off says nothing, the same words wait a minute."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from roundhouse.api.downloads import DownloadItem, DownloadQueueView, DownloadState, DownloadTotals
from roundhouse.api.settings import NotificationSettings, NotificationWhen, Settings
from roundhouse.base.paths import resolve_home
from roundhouse.gui.app import build_ui
from roundhouse.gui.notify import Notifier, Route


def _queue(*states: DownloadState) -> DownloadQueueView:
    items = [
        DownloadItem(
            id=f"d{n}",
            repo="org/tiny-GGUF",
            revision="main",
            commit="0" * 40,
            path=f"tiny-{n}.gguf",
            size=10,
            bytes_done=10,
            state=state,
            etag="e",
            created_at=1.0,
            updated_at=2.0,
        )
        for n, state in enumerate(states)
    ]
    return DownloadQueueView(items=items, totals=DownloadTotals(), max_concurrent=2, hub_cache="/h")


def test_when_on_screen_kinds_off_and_repeats(
    qapp: QApplication, home_root: Path, qtbot: QtBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    ui = build_ui(qapp, resolve_home(home_root), auto_start=False, tray_available=False)
    qtbot.addWidget(ui.window)
    assert ui.notifier is not None and ui.notifier.route == Route.STATUS_BAR
    notifier = Notifier(ui.bridge, ui.window, None, gather_ms=50)
    told: list[tuple[str, str, str]] = []
    notifier.told.connect(lambda route, title, text: told.append((route, title, text)))
    bridge = ui.bridge
    running, done = DownloadState.DOWNLOADING, DownloadState.DONE

    def settings(**fields: object) -> None:
        bridge.settings_full = Settings(notifications=NotificationSettings.model_validate(fields))

    # On screen, "hidden" (the default): not told.
    ui.window.show()
    qtbot.waitExposed(ui.window)
    bridge.downloads_changed.emit(_queue(running, running, running))
    bridge.downloads_changed.emit(_queue(done, running, running))
    qtbot.wait(200)
    assert told == []
    # "Always": told while on screen, in the status bar.
    settings(when=NotificationWhen.ALWAYS)
    bridge.downloads_changed.emit(_queue(done, done, running))
    qtbot.waitUntil(lambda: len(told) == 1, timeout=2000)
    text = "tiny-1.gguf from org/tiny-GGUF finished downloading."
    assert told == [("status bar", "Download finished", text)]
    assert ui.window.statusBar().currentMessage() == f"Download finished: {text}"
    # Finished downloads turned off: the last one is not told.
    settings(when=NotificationWhen.ALWAYS, download_finished=False)
    bridge.downloads_changed.emit(_queue(done, done, done))
    qtbot.wait(200)
    assert len(told) == 1
    # The same words within a minute are not told again (a download that fails, resumes
    # and fails again the same way).
    settings(when=NotificationWhen.ALWAYS)
    failed = DownloadState.FAILED
    bridge.downloads_changed.emit(_queue(done, done, done, running))
    bridge.downloads_changed.emit(_queue(done, done, done, failed))
    qtbot.waitUntil(lambda: len(told) == 2, timeout=2000)
    assert told[1][1] == "Download failed"
    bridge.downloads_changed.emit(_queue(done, done, done, running))
    bridge.downloads_changed.emit(_queue(done, done, done, failed))
    qtbot.wait(200)
    assert len(told) == 2
    ui.window.hide()
