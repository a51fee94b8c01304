"""The global quick chat key: the OS layer for this platform, following the `ui` settings
(on or off, which key), with the state in words for the Settings page."""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QGuiApplication

from roundhouse.api.shortcut import Shortcut, parse_shortcut
from roundhouse.gui.hotkey.backend import HotkeyBackend, NoGlobalKey
from roundhouse.gui.hotkey.wayland import bind_it_yourself

OFF_WORDS = "Off: the key opens quick chat only inside Roundhouse's windows."


def platform_backend() -> HotkeyBackend:
    """The layer for the Qt platform the app runs on."""
    platform = QGuiApplication.platformName()
    if platform == "xcb":
        from roundhouse.gui.hotkey.x11 import X11Hotkey

        return X11Hotkey()
    if platform == "windows" or (sys.platform == "win32" and platform != "offscreen"):
        from roundhouse.gui.hotkey.windows import WindowsHotkey

        return WindowsHotkey()
    if platform == "cocoa":
        from roundhouse.gui.hotkey.macos import MacHotkey

        return MacHotkey()
    if platform.startswith("wayland"):
        return _WaylandWords()
    return NoGlobalKey(
        f"This display ({platform or 'none'}) offers no global keys: the key works inside "
        "Roundhouse's windows, and `roundhouse quick-chat` opens quick chat from a terminal."
    )


class _WaylandWords(NoGlobalKey):
    name = "Wayland"

    def __init__(self) -> None:
        super().__init__("")

    def register(self, shortcut: Shortcut) -> str | None:
        return bind_it_yourself(shortcut)


class GlobalHotkey(QObject):
    """`apply(on, key)` (un)registers; `activated` on a press; `words` say the state."""

    activated = Signal()
    changed = Signal()

    def __init__(self, backend: HotkeyBackend | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.backend = backend if backend is not None else platform_backend()
        self.backend.setParent(self)
        self.backend.activated.connect(self.activated)
        self.shortcut: Shortcut | None = None
        self.enabled = False
        # Empty while the key is held; else why not, in words.
        self.problem = ""
        self.words = OFF_WORDS
        self._applied: tuple[bool, str] | None = None

    @property
    def active(self) -> bool:
        return self.enabled and self.shortcut is not None and not self.problem

    def apply(self, enabled: bool, key: str) -> None:
        """Hold `key` for the whole desktop when `enabled`; the same pair again does nothing."""
        if self._applied == (enabled, key):
            return
        self._applied = (enabled, key)
        self.backend.unregister()
        self.enabled = enabled
        self.problem = ""
        try:
            self.shortcut = parse_shortcut(key)
        except ValueError as exc:
            self.shortcut = None
            self.problem = f"The quick chat key was not set: {exc}."
        if enabled and self.shortcut is not None:
            self.problem = self.backend.register(self.shortcut) or ""
        if not enabled:
            self.words = OFF_WORDS
        elif self.problem:
            self.words = self.problem
        else:
            self.words = f"{self.shortcut} opens quick chat while any program has focus."
        self.changed.emit()

    def close(self) -> None:
        self.backend.unregister()
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()
        self._applied = None
