"""The global key on X11: XGrabKey on the root window through libX11 (ctypes), on a connection
of its own whose socket a QSocketNotifier watches, so presses arrive on the Qt loop."""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
from typing import Any

from PySide6.QtCore import QObject, QSocketNotifier

from roundhouse.api.shortcut import Shortcut
from roundhouse.gui.hotkey.backend import HotkeyBackend, taken_words
from roundhouse.gui.hotkey.keycodes import X_LOCK_VARIANTS, x11_keysym, x11_modifiers

log = logging.getLogger(__name__)

KEY_PRESS = 2
KEY_RELEASE = 3
GRAB_MODE_ASYNC = 1
BAD_ACCESS = 10  # X.h: another client grabbed this key with these modifiers first
X_GRAB_KEY = 33  # the GrabKey request's major opcode


class XKeyEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("serial", ctypes.c_ulong),
        ("send_event", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("window", ctypes.c_ulong),
        ("root", ctypes.c_ulong),
        ("subwindow", ctypes.c_ulong),
        ("time", ctypes.c_ulong),
        ("x", ctypes.c_int),
        ("y", ctypes.c_int),
        ("x_root", ctypes.c_int),
        ("y_root", ctypes.c_int),
        ("state", ctypes.c_uint),
        ("keycode", ctypes.c_uint),
        ("same_screen", ctypes.c_int),
    ]


class XEvent(ctypes.Union):
    # Xlib.h: the union is padded to 24 longs.
    _fields_ = [("type", ctypes.c_int), ("xkey", XKeyEvent), ("pad", ctypes.c_long * 24)]


class XErrorEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("resourceid", ctypes.c_ulong),
        ("serial", ctypes.c_ulong),
        ("error_code", ctypes.c_ubyte),
        ("request_code", ctypes.c_ubyte),
        ("minor_code", ctypes.c_ubyte),
    ]


X_ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(XErrorEvent))


def declare(lib: Any) -> Any:
    """libX11's functions used here, with their C signatures."""
    display, window = ctypes.c_void_p, ctypes.c_ulong
    signatures: dict[str, tuple[list[Any], Any]] = {
        "XOpenDisplay": ([ctypes.c_char_p], display),
        "XCloseDisplay": ([display], ctypes.c_int),
        "XDefaultRootWindow": ([display], window),
        "XKeysymToKeycode": ([display, ctypes.c_ulong], ctypes.c_ubyte),
        "XGrabKey": (
            [
                display,
                ctypes.c_int,
                ctypes.c_uint,
                window,
                ctypes.c_int,
                ctypes.c_int,
                ctypes.c_int,
            ],
            ctypes.c_int,
        ),
        "XUngrabKey": ([display, ctypes.c_int, ctypes.c_uint, window], ctypes.c_int),
        "XSync": ([display, ctypes.c_int], ctypes.c_int),
        "XFlush": ([display], ctypes.c_int),
        "XPending": ([display], ctypes.c_int),
        "XNextEvent": ([display, ctypes.POINTER(XEvent)], ctypes.c_int),
        "XConnectionNumber": ([display], ctypes.c_int),
        # The handler as a plain pointer, so the one it replaces can be put back as it was.
        "XSetErrorHandler": ([ctypes.c_void_p], ctypes.c_void_p),
        "XkbSetDetectableAutoRepeat": (
            [display, ctypes.c_int, ctypes.POINTER(ctypes.c_int)],
            ctypes.c_int,
        ),
    }
    for name, (argtypes, restype) in signatures.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = restype
    return lib


def load_libx11() -> Any | None:
    path = ctypes.util.find_library("X11")
    if path is None:
        return None
    try:
        return declare(ctypes.CDLL(path))
    except OSError:
        return None


class X11Hotkey(HotkeyBackend):
    """One key grabbed on the root window of `display_name` (default: $DISPLAY)."""

    name = "X11"

    def __init__(self, display_name: str | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._display_name = display_name if display_name is not None else os.environ.get("DISPLAY")
        self._x: Any | None = None
        self._display: int | None = None
        self._root = 0
        self._notifier: QSocketNotifier | None = None
        self._grabs: list[tuple[int, int]] = []
        self._keycode = 0
        self._held = False

    def register(self, shortcut: Shortcut) -> str | None:
        self.unregister()
        problem = self._connect()
        if problem is not None:
            return problem
        x, display = self._x, self._display
        assert x is not None and display is not None
        keycode = int(x.XKeysymToKeycode(display, x11_keysym(shortcut.key)))
        if keycode == 0:
            return f"{shortcut} cannot be used: this keyboard has no {shortcut.key} key."
        modifiers = x11_modifiers(shortcut)
        errors: list[int] = []

        def on_error(_display: int, event: Any) -> int:
            if event.contents.request_code == X_GRAB_KEY:
                errors.append(int(event.contents.error_code))
            return 0

        handler = X_ERROR_HANDLER(on_error)
        # Xlib's error handler is one for the process: set only around the grab and put back.
        previous = x.XSetErrorHandler(ctypes.cast(handler, ctypes.c_void_p))
        try:
            for extra in X_LOCK_VARIANTS:
                x.XGrabKey(
                    display,
                    keycode,
                    modifiers | extra,
                    self._root,
                    0,
                    GRAB_MODE_ASYNC,
                    GRAB_MODE_ASYNC,
                )
                self._grabs.append((keycode, modifiers | extra))
            x.XSync(display, 0)  # the server's answer to each grab, errors included, is in
        finally:
            x.XSetErrorHandler(previous)
        if errors:
            self.unregister()
            if BAD_ACCESS in errors:
                return taken_words(shortcut, "another program on this X display grabbed it first")
            return f"{shortcut} could not be grabbed: the X server refused it (error {errors[0]})."
        self._keycode = keycode
        self._drain()  # anything Xlib read while it waited for the grabs' answers
        return None

    def unregister(self) -> None:
        if self._x is None or self._display is None:
            return
        for keycode, modifiers in self._grabs:
            self._x.XUngrabKey(self._display, keycode, modifiers, self._root)
        self._grabs = []
        self._keycode = 0
        self._held = False
        self._x.XFlush(self._display)

    def close(self) -> None:
        """Ungrab and close the connection (the app's end)."""
        self.unregister()
        if self._notifier is not None:
            self._notifier.setEnabled(False)
            self._notifier.deleteLater()
            self._notifier = None
        if self._x is not None and self._display is not None:
            self._x.XCloseDisplay(self._display)
        self._display = None

    # -- the connection ----------------------------------------------------------------------

    def _connect(self) -> str | None:
        if self._display is not None:
            return None
        if not self._display_name:
            return "No X display is set (DISPLAY is empty), so no key can be grabbed."
        x = load_libx11()
        if x is None:
            return "libX11 was not found, so no key can be grabbed; install libx11-6."
        display = x.XOpenDisplay(self._display_name.encode())
        if not display:
            return f"The X display {self._display_name} did not answer, so no key was grabbed."
        self._x, self._display = x, display
        self._root = int(x.XDefaultRootWindow(display))
        # Held down, the key repeats as presses only (no release between): one toggle.
        x.XkbSetDetectableAutoRepeat(display, 1, None)
        self._notifier = QSocketNotifier(x.XConnectionNumber(display), QSocketNotifier.Type.Read)
        self._notifier.activated.connect(self._drain)
        return None

    def _drain(self, *_: object) -> None:
        x, display = self._x, self._display
        if x is None or display is None:
            return
        event = XEvent()
        while x.XPending(display) > 0:
            x.XNextEvent(display, ctypes.byref(event))
            if event.type not in (KEY_PRESS, KEY_RELEASE) or event.xkey.keycode != self._keycode:
                continue
            if event.type == KEY_RELEASE:
                self._held = False
            elif not self._held and self._keycode:
                self._held = True
                self.activated.emit()
