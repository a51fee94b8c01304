"""The global key on Windows: RegisterHotKey for the GUI thread (no window), its WM_HOTKEY
read by a native event filter as Qt's event dispatcher takes it from the thread's queue."""

from __future__ import annotations

import ctypes
from typing import Any

from PySide6.QtCore import QAbstractNativeEventFilter, QCoreApplication, QObject

from roundhouse.api.shortcut import Shortcut
from roundhouse.gui.hotkey.backend import HotkeyBackend, taken_words
from roundhouse.gui.hotkey.keycodes import windows_modifiers, windows_virtual_key

WM_HOTKEY = 0x0312
ERROR_HOTKEY_ALREADY_REGISTERED = 1409
# Our id for RegisterHotKey: an application's ids are 0x0000-0xBFFF.
HOTKEY_ID = 0x5248  # "RH"
GENERIC_MSG = b"windows_generic_MSG"


class MSG(ctypes.Structure):
    """winuser.h's MSG, which Qt hands the filter a pointer to."""

    _fields_ = [
        ("hwnd", ctypes.c_void_p),
        ("message", ctypes.c_uint32),
        ("wParam", ctypes.c_size_t),  # WPARAM: UINT_PTR
        ("lParam", ctypes.c_ssize_t),  # LPARAM: LONG_PTR
        ("time", ctypes.c_uint32),  # DWORD
        ("pt_x", ctypes.c_int32),  # LONG: 32 bits on Windows
        ("pt_y", ctypes.c_int32),
    ]


def declare(user32: Any) -> Any:
    """user32's two calls with their C signatures (HWND, int, UINT, UINT) -> BOOL."""
    user32.RegisterHotKey.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_uint]
    user32.RegisterHotKey.restype = ctypes.c_int
    user32.UnregisterHotKey.argtypes = [ctypes.c_void_p, ctypes.c_int]
    user32.UnregisterHotKey.restype = ctypes.c_int
    return user32


def load_user32() -> Any:
    # use_last_error: GetLastError's value is kept by ctypes right after the call.
    return declare(ctypes.WinDLL("user32", use_last_error=True))  # type: ignore[attr-defined,unused-ignore]


class _HotkeyFilter(QAbstractNativeEventFilter):
    def __init__(self, owner: WindowsHotkey) -> None:
        super().__init__()
        self._owner = owner

    def nativeEventFilter(self, eventType: Any, message: int) -> object:
        if bytes(eventType) == GENERIC_MSG and message:
            msg = MSG.from_address(int(message))
            if msg.message == WM_HOTKEY and msg.wParam == HOTKEY_ID and self._owner.registered:
                self._owner.activated.emit()
                return True, 0
        return False, 0


class WindowsHotkey(HotkeyBackend):
    """RegisterHotKey(NULL, HOTKEY_ID, modifiers | MOD_NOREPEAT, virtual key)."""

    name = "Windows"

    def __init__(
        self,
        user32: Any | None = None,
        last_error: Any = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._user32 = user32
        # GetLastError as ctypes kept it (only Windows has it; the tests give their own).
        self._last_error = last_error or getattr(ctypes, "get_last_error", lambda: 0)
        self.registered = False
        self.filter = _HotkeyFilter(self)
        self._filtering = False

    def register(self, shortcut: Shortcut) -> str | None:
        self.unregister()
        if self._user32 is None:
            self._user32 = load_user32()
        ok = self._user32.RegisterHotKey(
            None, HOTKEY_ID, windows_modifiers(shortcut), windows_virtual_key(shortcut.key)
        )
        if not ok:
            error = int(self._last_error())
            if error == ERROR_HOTKEY_ALREADY_REGISTERED:
                return taken_words(shortcut, "Windows says another program registered it")
            return f"{shortcut} could not be registered: Windows refused it (error {error})."
        self.registered = True
        app = QCoreApplication.instance()
        if app is not None and not self._filtering:
            app.installNativeEventFilter(self.filter)
            self._filtering = True
        return None

    def unregister(self) -> None:
        if self.registered and self._user32 is not None:
            self._user32.UnregisterHotKey(None, HOTKEY_ID)
        self.registered = False
