"""The global key's Windows and macOS layers through their recorded API calls: the ctypes
signatures they declare, the arguments passed (modifiers, virtual key codes), the "taken"
answers in words, and a press delivered as each OS delivers it (a MSG, a Carbon event)."""

from __future__ import annotations

import ctypes
import sys
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from roundhouse.api.shortcut import parse_shortcut
from roundhouse.gui.hotkey import keycodes, macos, windows
from roundhouse.gui.hotkey.controller import GlobalHotkey
from roundhouse.gui.hotkey.macos import EventHotKeyID, EventTypeSpec, MacHotkey
from roundhouse.gui.hotkey.windows import MSG, WindowsHotkey


class Recorded:
    """One C function: its declared argtypes/restype, each call's arguments as converted by
    those argtypes (a wrong type fails as ctypes would), and the answer to give."""

    def __init__(self, answer: Any = 1, effect: Any = None) -> None:
        self.argtypes: list[Any] | None = None
        self.restype: Any = None
        self.calls: list[tuple[Any, ...]] = []
        self.answer = answer
        self.effect = effect

    def __call__(self, *args: Any) -> Any:
        assert self.argtypes is not None, "called before its signature was declared"
        assert len(args) == len(self.argtypes)
        for argtype, arg in zip(self.argtypes, args, strict=True):
            argtype.from_param(arg)
        self.calls.append(args)
        if self.effect is not None:
            self.effect(*args)
        return self.answer


class Library:
    def __init__(self, **functions: Recorded) -> None:
        self.__dict__.update(functions)


# -- Windows ---------------------------------------------------------------------------------


def _user32(ok: int = 1) -> Library:
    return windows.declare(Library(RegisterHotKey=Recorded(ok), UnregisterHotKey=Recorded(1)))


def test_windows_declares_register_hotkey_as_winuser_h_does() -> None:
    user32 = _user32()
    assert user32.RegisterHotKey.argtypes == [
        ctypes.c_void_p,  # HWND
        ctypes.c_int,  # int id
        ctypes.c_uint,  # UINT fsModifiers
        ctypes.c_uint,  # UINT vk
    ]
    assert user32.RegisterHotKey.restype is ctypes.c_int  # BOOL
    assert user32.UnregisterHotKey.argtypes == [ctypes.c_void_p, ctypes.c_int]
    assert user32.UnregisterHotKey.restype is ctypes.c_int


@pytest.mark.parametrize(
    ("text", "modifiers", "vk"),
    [
        ("Ctrl+Shift+Space", 0x0002 | 0x0004, 0x20),
        ("Alt+Meta+K", 0x0001 | 0x0008, 0x4B),
        ("Ctrl+F12", 0x0002, 0x7B),
        ("Ctrl+Alt+/", 0x0002 | 0x0001, 0xBF),
        ("Ctrl+7", 0x0002, 0x37),
    ],
)
def test_windows_registers_the_key_for_the_thread(
    qapp: QApplication, text: str, modifiers: int, vk: int
) -> None:
    user32 = _user32()
    backend = WindowsHotkey(user32=user32)
    assert backend.register(parse_shortcut(text)) is None
    # No window: WM_HOTKEY goes to the GUI thread's queue; MOD_NOREPEAT: one per press.
    assert user32.RegisterHotKey.calls == [(None, windows.HOTKEY_ID, modifiers | 0x4000, vk)]
    backend.unregister()
    assert user32.UnregisterHotKey.calls == [(None, windows.HOTKEY_ID)]
    qapp.removeNativeEventFilter(backend.filter)


def test_windows_says_which_key_is_taken(qapp: QApplication) -> None:
    backend = WindowsHotkey(user32=_user32(ok=0), last_error=lambda: 1409)
    problem = backend.register(parse_shortcut("Ctrl+Alt+J"))
    assert problem is not None and problem.startswith(
        "Ctrl+Alt+J is taken: Windows says another program registered it. Choose another key"
    )
    assert not backend.registered
    other = WindowsHotkey(user32=_user32(ok=0), last_error=lambda: 5)
    assert other.register(parse_shortcut("Ctrl+Alt+J")) == (
        "Ctrl+Alt+J could not be registered: Windows refused it (error 5)."
    )


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="the x64 layout")
def test_the_msg_has_the_x64_layout() -> None:
    assert [MSG.hwnd.offset, MSG.message.offset, MSG.wParam.offset, MSG.lParam.offset] == [
        0,
        8,
        16,
        24,
    ]
    assert MSG.time.offset == 32 and MSG.pt_x.offset == 36 and ctypes.sizeof(MSG) == 48


def test_a_wm_hotkey_from_qts_dispatcher_is_a_press(qapp: QApplication) -> None:
    backend = WindowsHotkey(user32=_user32())
    assert backend.register(parse_shortcut("Ctrl+Shift+Space")) is None
    presses: list[int] = []
    backend.activated.connect(lambda: presses.append(1))
    ours = MSG(message=windows.WM_HOTKEY, wParam=windows.HOTKEY_ID)
    assert backend.filter.nativeEventFilter(b"windows_generic_MSG", ctypes.addressof(ours)) == (
        True,
        0,
    )
    other_id = MSG(message=windows.WM_HOTKEY, wParam=7)
    a_paint = MSG(message=0x000F, wParam=windows.HOTKEY_ID)
    for msg in (other_id, a_paint):
        handled = backend.filter.nativeEventFilter(b"windows_generic_MSG", ctypes.addressof(msg))
        assert handled == (False, 0)
    assert presses == [1]
    backend.unregister()
    backend.filter.nativeEventFilter(b"windows_generic_MSG", ctypes.addressof(ours))
    assert presses == [1], "no press once the key is let go"
    qapp.removeNativeEventFilter(backend.filter)


@pytest.mark.skipif(sys.platform != "win32", reason="RegisterHotKey is Windows")
def test_windows_refuses_a_key_held_already(qapp: QApplication) -> None:
    first, second = WindowsHotkey(), WindowsHotkey()
    try:
        assert first.register(parse_shortcut("Ctrl+Alt+Shift+F11")) is None
        problem = second.register(parse_shortcut("Ctrl+Alt+Shift+F11"))
        assert problem is not None and "is taken" in problem
    finally:
        first.unregister()
        second.unregister()


# -- macOS -----------------------------------------------------------------------------------

APP_TARGET = 0x5150


def _carbon(register_status: int = 0) -> Library:
    def fill_id(*args: Any) -> None:
        # GetEventParameter writes the pressed key's EventHotKeyID into the last argument.
        hotkey = args[6]._obj
        hotkey.signature = macos.SIGNATURE
        hotkey.id = macos.HOTKEY_ID

    def hand_out_ref(*args: Any) -> None:
        args[-1]._obj.value = 0xABC

    return macos.declare(
        Library(
            GetApplicationEventTarget=Recorded(APP_TARGET),
            RegisterEventHotKey=Recorded(register_status, hand_out_ref),
            UnregisterEventHotKey=Recorded(0),
            InstallEventHandler=Recorded(0, hand_out_ref),
            RemoveEventHandler=Recorded(0),
            GetEventParameter=Recorded(0, fill_id),
        )
    )


def test_macos_declares_carbons_signatures() -> None:
    carbon = _carbon()
    ref = ctypes.c_void_p
    assert carbon.GetApplicationEventTarget.argtypes == []
    assert carbon.GetApplicationEventTarget.restype is ref
    register = carbon.RegisterEventHotKey
    assert register.argtypes[:5] == [
        ctypes.c_uint32,
        ctypes.c_uint32,
        EventHotKeyID,
        ref,
        ctypes.c_uint32,
    ]
    assert register.argtypes[5]._type_ is ref and register.restype is ctypes.c_int32  # OSStatus
    install = carbon.InstallEventHandler
    assert install.argtypes[0] is ref and install.argtypes[1] is macos.EVENT_HANDLER
    assert install.argtypes[3]._type_ is EventTypeSpec
    assert carbon.GetEventParameter.argtypes[1:3] == [ctypes.c_uint32, ctypes.c_uint32]
    assert ctypes.sizeof(EventHotKeyID) == 8 and ctypes.sizeof(EventTypeSpec) == 8


@pytest.mark.parametrize(
    ("text", "modifiers", "code"),
    [
        # Qt's Ctrl is Command on macOS, Meta is Control.
        ("Ctrl+Shift+Space", 0x0100 | 0x0200, 0x31),
        ("Meta+Alt+K", 0x1000 | 0x0800, 0x28),
        ("Ctrl+F5", 0x0100, 0x60),
        ("Ctrl+Alt+A", 0x0100 | 0x0800, 0x00),
    ],
)
def test_macos_registers_the_hot_key_on_the_application_target(
    text: str, modifiers: int, code: int
) -> None:
    carbon = _carbon()
    backend = MacHotkey(carbon=carbon)
    assert backend.register(parse_shortcut(text)) is None
    (install,) = carbon.InstallEventHandler.calls
    assert install[0] == APP_TARGET and install[2] == 1
    spec = install[3]._obj
    assert (spec.eventClass, spec.eventKind) == (int.from_bytes(b"keyb", "big"), 5)
    (call,) = carbon.RegisterEventHotKey.calls
    assert call[0] == code and call[1] == modifiers
    assert (call[2].signature, call[2].id) == (int.from_bytes(b"RndH", "big"), 1)
    assert call[3] == APP_TARGET and call[4] == 0
    backend.unregister()
    assert len(carbon.UnregisterEventHotKey.calls) == 1
    assert carbon.UnregisterEventHotKey.calls[0][0].value == 0xABC


def test_macos_says_which_key_is_taken() -> None:
    backend = MacHotkey(carbon=_carbon(register_status=-9878))
    problem = backend.register(parse_shortcut("Ctrl+Shift+Space"))
    assert problem is not None and problem.startswith(
        "Ctrl+Shift+Space is taken: macOS says another program registered it."
    )
    assert MacHotkey(carbon=_carbon()).register(parse_shortcut("Ctrl+F22")) == (
        "Ctrl+F22 cannot be used: Mac keyboards have no F22 key."
    )


def test_a_carbon_hot_key_event_is_a_press() -> None:
    carbon = _carbon()
    backend = MacHotkey(carbon=carbon)
    assert backend.register(parse_shortcut("Ctrl+Shift+Space")) is None
    presses: list[int] = []
    backend.activated.connect(lambda: presses.append(1))
    # Through the C function pointer Carbon would call.
    assert backend._handler(None, 0x1234, None) == macos.NO_ERR
    assert presses == [1]
    (call,) = carbon.GetEventParameter.calls
    assert call[0] == 0x1234
    assert call[1:3] == (int.from_bytes(b"----", "big"), int.from_bytes(b"hkid", "big"))


def test_the_tables_give_every_key_a_code() -> None:
    from roundhouse.api.shortcut import KEYS

    for key in KEYS:
        assert keycodes.windows_virtual_key(key) > 0
        assert keycodes.x11_keysym(key) > 0
        if key not in {"F21", "F22", "F23", "F24"}:
            assert keycodes.mac_key_code(key) is not None, key
    assert len({keycodes.windows_virtual_key(k) for k in KEYS - {"Enter"}}) == len(KEYS) - 1


def test_the_controller_keeps_the_state_in_words(qapp: QApplication) -> None:
    hotkey = GlobalHotkey(WindowsHotkey(user32=_user32()))
    hotkey.apply(True, "Ctrl+Shift+Space")
    assert hotkey.active
    assert hotkey.words == "Ctrl+Shift+Space opens quick chat while any program has focus."
    hotkey.apply(False, "Ctrl+Shift+Space")
    assert not hotkey.active and hotkey.words.startswith("Off:")
    qapp.removeNativeEventFilter(hotkey.backend.filter)  # type: ignore[attr-defined]


class _Platform:
    def __init__(self, name: str) -> None:
        self.name = name

    def platformName(self) -> str:
        return self.name


@pytest.mark.parametrize(
    ("platform", "session", "bus", "layer"),
    [
        ("xcb", "x11", True, "X11Hotkey"),
        ("xcb", "wayland", True, "PortalHotkey"),  # XWayland: the portal, not a grab
        ("wayland", "wayland", True, "PortalHotkey"),
        ("wayland", "wayland", False, "_WaylandWords"),
        ("windows", "", False, "WindowsHotkey"),
        ("cocoa", "", False, "MacHotkey"),
        ("offscreen", "", False, "NoGlobalKey"),
    ],
)
def test_each_platform_gets_its_layer(
    qapp: QApplication,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    platform: str,
    session: str,
    bus: bool,
    layer: str,
) -> None:
    from roundhouse.gui.hotkey import controller

    monkeypatch.setattr(controller, "QGuiApplication", _Platform(platform))
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("XDG_SESSION_TYPE", session)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    if bus:
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent")
    else:
        monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    backend = controller.platform_backend()
    assert type(backend).__name__ == layer
    if layer == "NoGlobalKey":
        assert backend.register(parse_shortcut("Ctrl+Shift+Space")) == (
            "This display (offscreen) offers no global keys: the key works inside Roundhouse's "
            "windows, and `roundhouse quick-chat` opens quick chat from a terminal."
        )
