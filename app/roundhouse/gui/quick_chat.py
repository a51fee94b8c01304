"""Quick chat: its shortcut in the app's windows, and its window (quick_chat_window.py), which
is built, and its modules imported, the first time it opens."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QKeySequence, QShortcut

from roundhouse.api.shortcut import DEFAULT_QUICK_CHAT_KEY

if TYPE_CHECKING:
    from roundhouse.gui.active_model import ActiveModel
    from roundhouse.gui.daemon_bridge import DaemonBridge
    from roundhouse.gui.main_window import MainWindow
    from roundhouse.gui.quick_chat_window import QuickChatWindow

# Until the daemon's settings say which key (ui.quick_chat_key).
SHORTCUT = DEFAULT_QUICK_CHAT_KEY


class QuickChat:
    """Builds the window on first use, and the shortcut that opens it from the app's windows."""

    def __init__(
        self,
        bridge: DaemonBridge,
        main_window: MainWindow,
        active_model: ActiveModel,
        *,
        geometry_store: QSettings | None = None,
    ) -> None:
        self._bridge = bridge
        self._main = main_window
        self._active = active_model
        self._geometry_store = geometry_store
        self.window: QuickChatWindow | None = None
        # Application-wide: it works in any of Roundhouse's windows while the main one shows.
        self.shortcut = QShortcut(QKeySequence(SHORTCUT), main_window)
        self.shortcut.setContext(Qt.ShortcutContext.ApplicationShortcut)
        self.shortcut.activated.connect(self.toggle)

    def set_key(self, key: QKeySequence) -> None:
        """The key the settings chose, for the app's windows (the global one is apart)."""
        self.shortcut.setKey(key)
        if self.window is not None:
            self.window.key = key

    def open(self) -> QuickChatWindow:
        if self.window is None:
            # Here, not at the top: its reply view and markdown cost ~1.5 MB of an app that
            # may never open it.
            from roundhouse.gui.quick_chat_window import QuickChatWindow

            self.window = QuickChatWindow(
                self._bridge, self._main, self._active, geometry_store=self._geometry_store
            )
            self.window.key = self.shortcut.key()
        self.window.present()
        return self.window

    def toggle(self) -> None:
        if self.window is not None and self.window.isVisible():
            self.window.hide()
        else:
            self.open()

    def close(self) -> None:
        """For the end of the app: stop a reply still streaming, hide the window."""
        if self.window is not None:
            self.window.stop()
            self.window.hide()
