"""The global quick chat key: the OS layer for this platform, following the `ui` settings
(on or off, which key), with the state in words for the Settings page."""

from __future__ import annotations

import os
import sys

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QGuiApplication

from roundhouse.api.shortcut import Shortcut, parse_shortcut
from roundhouse.gui.hotkey.backend import HotkeyBackend, NoGlobalKey
from roundhouse.gui.hotkey.keycodes import xdg_trigger
from roundhouse.gui.hotkey.wayland import bind_it_yourself

OFF_WORDS = "Off: the key opens quick chat only inside Roundhouse's windows."


def wayland_session() -> bool:
    """A Wayland desktop, whichever Qt platform the app uses (xcb through XWayland too)."""
    return bool(os.environ.get("WAYLAND_DISPLAY")) or (
        os.environ.get("XDG_SESSION_TYPE", "").lower() == "wayland"
    )


def platform_backend() -> HotkeyBackend:
    """The layer for the Qt platform the app runs on."""
    platform = QGuiApplication.platformName()
    # On Wayland an X11 grab would work only while an XWayland window has the focus.
    if platform.startswith("wayland") or (platform == "xcb" and wayland_session()):
        from roundhouse.gui.notify_dbus import session_bus_address

        address = session_bus_address()
        if address is None:
            return _WaylandWords()
        from roundhouse.gui.hotkey.portal import PortalHotkey

        return PortalHotkey(address)
    if platform == "xcb":
        from roundhouse.gui.hotkey.x11 import X11Hotkey

        return X11Hotkey()
    if platform == "windows" or (sys.platform == "win32" and platform != "offscreen"):
        from roundhouse.gui.hotkey.windows import WindowsHotkey

        return WindowsHotkey()
    if platform == "cocoa":
        from roundhouse.gui.hotkey.macos import MacHotkey

        return MacHotkey()
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
        self.backend.settled.connect(self._on_settled)
        # True while the desktop is being asked (the portal answers later).
        self.pending = False
        self.shortcut: Shortcut | None = None
        self.enabled = False
        # Empty while the key is held; else why not, in words.
        self.problem = ""
        self.words = OFF_WORDS
        self._applied: tuple[bool, str] | None = None

    @property
    def active(self) -> bool:
        return self.enabled and self.shortcut is not None and not self.problem and not self.pending

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
        self.pending = False
        if enabled and self.shortcut is not None:
            self.problem = self.backend.register(self.shortcut) or ""
            self.pending = self.backend.asynchronous and not self.problem
        self._say()

    def _on_settled(self, problem: str) -> None:
        if not self.pending:
            return  # an answer for a key asked before the last change
        self.pending = False
        self.problem = problem
        self._say()

    def _bound_as_asked(self) -> bool:
        """Whether the desktop's description names the key asked for (in its own spelling)."""
        assert self.shortcut is not None

        def plain(text: str) -> str:
            return text.replace(" ", "").lower()

        asked = {plain(str(self.shortcut)), plain(xdg_trigger(self.shortcut))}
        return plain(self.backend.bound_as) in asked

    def _say(self) -> None:
        if not self.enabled:
            self.words = OFF_WORDS
        elif self.problem:
            self.words = self.problem
        elif self.pending:
            self.words = f"Asking the desktop to bind {self.shortcut} for quick chat…"
        elif self.backend.bound_as and not self._bound_as_asked():
            self.words = (
                f"The desktop bound quick chat to {self.backend.bound_as} (its own settings "
                "can change it); it works while any program has focus."
            )
        else:
            self.words = f"{self.shortcut} opens quick chat while any program has focus."
        self.changed.emit()

    def close(self) -> None:
        self.backend.unregister()
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()
        self._applied = None
