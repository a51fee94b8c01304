"""Quick chat from anywhere: the global key (per the `ui` settings) and the app's channel that
`roundhouse quick-chat` opens it through; the in-app shortcut follows the same key."""

from __future__ import annotations

import weakref

from PySide6.QtCore import QObject
from PySide6.QtGui import QKeySequence

from roundhouse.api.settings import UiSettings
from roundhouse.base.paths import Home
from roundhouse.gui.app_channel import AppChannel
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.hotkey.backend import HotkeyBackend
from roundhouse.gui.hotkey.controller import GlobalHotkey
from roundhouse.gui.quick_chat import QuickChat

# One per bridge (the app has one): the Settings page finds it here to show its state.
_by_bridge: weakref.WeakKeyDictionary[DaemonBridge, QuickChatKey] = weakref.WeakKeyDictionary()


class QuickChatKey(QObject):
    """Built once the app runs; `start()` listens and follows the settings from then on."""

    def __init__(
        self,
        bridge: DaemonBridge,
        quick_chat: QuickChat,
        home: Home,
        *,
        backend: HotkeyBackend | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._quick_chat = quick_chat
        self.hotkey = GlobalHotkey(backend, self)
        self.hotkey.activated.connect(self.on_key)
        self.channel = AppChannel(home, quick_chat.open, self)
        _by_bridge[bridge] = self

    @staticmethod
    def of(bridge: DaemonBridge) -> QuickChatKey | None:
        return _by_bridge.get(bridge)

    def start(self) -> None:
        self.channel.listen()
        # The key comes with the daemon's settings (at connect, and each change): until then
        # nothing is grabbed, so a key the user moved away from is never taken meanwhile.
        self._bridge.ui_settings_changed.connect(self.apply)
        if self._bridge.state == ConnectionState.CONNECTED:
            self.apply(self._bridge.ui_settings)

    def apply(self, ui: UiSettings) -> None:
        self._quick_chat.set_key(
            QKeySequence.fromString(ui.quick_chat_key, QKeySequence.SequenceFormat.PortableText)
        )
        self.hotkey.apply(ui.quick_chat_global, ui.quick_chat_key)

    def on_key(self) -> None:
        """The global key: quick chat comes to the front, or goes when it is in front."""
        window = self._quick_chat.window
        if window is not None and window.isVisible() and window.isActiveWindow():
            window.hide()
        else:
            self._quick_chat.open()

    def close(self) -> None:
        self.hotkey.close()
        self.channel.close()
