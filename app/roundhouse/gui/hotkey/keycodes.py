"""A Shortcut's key and modifiers in each OS's terms: X11 keysyms, Windows virtual keys, macOS
Carbon key codes, and each one's modifier bits (from X.h/keysymdef.h, winuser.h, Events.h)."""

from __future__ import annotations

from roundhouse.api.shortcut import FUNCTION_KEYS, Modifier, Shortcut

# -- X11 -------------------------------------------------------------------------------------
X_SHIFT_MASK = 1 << 0
X_LOCK_MASK = 1 << 1  # Caps Lock
X_CONTROL_MASK = 1 << 2
X_MOD1_MASK = 1 << 3  # Alt
X_MOD2_MASK = 1 << 4  # Num Lock on every common keymap
X_MOD4_MASK = 1 << 6  # Super (the Windows key)
# A passive grab matches the modifier state exactly: Caps Lock or Num Lock being on would
# make the key go past it, so the grab is made with each combination of the two too.
X_LOCK_VARIANTS = (0, X_LOCK_MASK, X_MOD2_MASK, X_LOCK_MASK | X_MOD2_MASK)
_X_MODIFIERS = {
    Modifier.SHIFT: X_SHIFT_MASK,
    Modifier.CTRL: X_CONTROL_MASK,
    Modifier.ALT: X_MOD1_MASK,
    Modifier.META: X_MOD4_MASK,
}
_X_NAMED = {
    "Space": 0x0020,
    "Return": 0xFF0D,
    "Enter": 0xFF8D,  # KP_Enter
    "Tab": 0xFF09,
    "Esc": 0xFF1B,
    "Backspace": 0xFF08,
    "Ins": 0xFF63,
    "Del": 0xFFFF,
    "Home": 0xFF50,
    "End": 0xFF57,
    "PgUp": 0xFF55,
    "PgDown": 0xFF56,
    "Left": 0xFF51,
    "Up": 0xFF52,
    "Right": 0xFF53,
    "Down": 0xFF54,
}


def x11_keysym(key: str) -> int:
    if key in _X_NAMED:
        return _X_NAMED[key]
    if key in FUNCTION_KEYS:
        return 0xFFBE + int(key[1:]) - 1  # XK_F1 onwards
    # Letters (lower case: the keysym the key itself makes), digits and punctuation are
    # their Latin-1 code.
    return ord(key.lower())


def x11_modifiers(shortcut: Shortcut) -> int:
    mask = 0
    for modifier in shortcut.modifiers:
        mask |= _X_MODIFIERS[modifier]
    return mask


# The XDG shortcuts specification's trigger text (the desktop portal's preferred_trigger):
# modifiers CTRL, ALT, SHIFT, LOGO and the key's xkb keysym name.
_XDG_MODIFIERS = {
    Modifier.CTRL: "CTRL",
    Modifier.ALT: "ALT",
    Modifier.SHIFT: "SHIFT",
    Modifier.META: "LOGO",
}
_XDG_NAMED = {
    "Space": "space",
    "Return": "Return",
    "Enter": "KP_Enter",
    "Tab": "Tab",
    "Esc": "Escape",
    "Backspace": "BackSpace",
    "Ins": "Insert",
    "Del": "Delete",
    "Home": "Home",
    "End": "End",
    "PgUp": "Page_Up",
    "PgDown": "Page_Down",
    "Left": "Left",
    "Up": "Up",
    "Right": "Right",
    "Down": "Down",
    ",": "comma",
    ".": "period",
    ";": "semicolon",
    "'": "apostrophe",
    "[": "bracketleft",
    "]": "bracketright",
    "\\": "backslash",
    "-": "minus",
    "=": "equal",
    "`": "grave",
    "/": "slash",
}


def xdg_trigger(shortcut: Shortcut) -> str:
    """`Ctrl+Shift+Space` as `CTRL+SHIFT+space`."""
    names = [_XDG_MODIFIERS[m] for m in Modifier if m in shortcut.modifiers]
    key = shortcut.key
    names.append(_XDG_NAMED.get(key, key.lower() if len(key) == 1 else key))
    return "+".join(names)


# -- Windows ---------------------------------------------------------------------------------
MOD_ALT = 0x0001
MOD_CONTROL = 0x0002
MOD_SHIFT = 0x0004
MOD_WIN = 0x0008
MOD_NOREPEAT = 0x4000  # holding the key down sends one WM_HOTKEY, not one per repeat
_WIN_MODIFIERS = {
    Modifier.ALT: MOD_ALT,
    Modifier.CTRL: MOD_CONTROL,
    Modifier.SHIFT: MOD_SHIFT,
    Modifier.META: MOD_WIN,
}
_WIN_NAMED = {
    "Space": 0x20,
    "Return": 0x0D,
    "Enter": 0x0D,
    "Tab": 0x09,
    "Esc": 0x1B,
    "Backspace": 0x08,
    "Ins": 0x2D,
    "Del": 0x2E,
    "Home": 0x24,
    "End": 0x23,
    "PgUp": 0x21,
    "PgDown": 0x22,
    "Left": 0x25,
    "Up": 0x26,
    "Right": 0x27,
    "Down": 0x28,
    ";": 0xBA,  # VK_OEM_1
    "=": 0xBB,  # VK_OEM_PLUS
    ",": 0xBC,
    "-": 0xBD,
    ".": 0xBE,
    "/": 0xBF,  # VK_OEM_2
    "`": 0xC0,  # VK_OEM_3
    "[": 0xDB,
    "\\": 0xDC,
    "]": 0xDD,
    "'": 0xDE,
}


def windows_virtual_key(key: str) -> int:
    if key in _WIN_NAMED:
        return _WIN_NAMED[key]
    if key in FUNCTION_KEYS:
        return 0x70 + int(key[1:]) - 1  # VK_F1 onwards
    return ord(key)  # 'A'-'Z' and '0'-'9' are their own virtual keys


def windows_modifiers(shortcut: Shortcut) -> int:
    mask = MOD_NOREPEAT
    for modifier in shortcut.modifiers:
        mask |= _WIN_MODIFIERS[modifier]
    return mask


# -- macOS (Carbon) --------------------------------------------------------------------------
CMD_KEY = 0x0100
SHIFT_KEY = 0x0200
OPTION_KEY = 0x0800
CONTROL_KEY = 0x1000
# As in Qt on macOS: "Ctrl" is the Command key and "Meta" the Control key.
_MAC_MODIFIERS = {
    Modifier.CTRL: CMD_KEY,
    Modifier.SHIFT: SHIFT_KEY,
    Modifier.ALT: OPTION_KEY,
    Modifier.META: CONTROL_KEY,
}
# kVK_* from HIToolbox/Events.h: positions on an ANSI keyboard, not characters.
_MAC_KEYS = {
    "A": 0x00,
    "S": 0x01,
    "D": 0x02,
    "F": 0x03,
    "H": 0x04,
    "G": 0x05,
    "Z": 0x06,
    "X": 0x07,
    "C": 0x08,
    "V": 0x09,
    "B": 0x0B,
    "Q": 0x0C,
    "W": 0x0D,
    "E": 0x0E,
    "R": 0x0F,
    "Y": 0x10,
    "T": 0x11,
    "1": 0x12,
    "2": 0x13,
    "3": 0x14,
    "4": 0x15,
    "6": 0x16,
    "5": 0x17,
    "=": 0x18,
    "9": 0x19,
    "7": 0x1A,
    "-": 0x1B,
    "8": 0x1C,
    "0": 0x1D,
    "]": 0x1E,
    "O": 0x1F,
    "U": 0x20,
    "[": 0x21,
    "I": 0x22,
    "P": 0x23,
    "Return": 0x24,
    "L": 0x25,
    "J": 0x26,
    "'": 0x27,
    "K": 0x28,
    ";": 0x29,
    "\\": 0x2A,
    ",": 0x2B,
    "/": 0x2C,
    "N": 0x2D,
    "M": 0x2E,
    ".": 0x2F,
    "Tab": 0x30,
    "Space": 0x31,
    "`": 0x32,
    "Backspace": 0x33,
    "Esc": 0x35,
    "Enter": 0x4C,
    "Ins": 0x72,  # Help, where the Insert key sits
    "Home": 0x73,
    "PgUp": 0x74,
    "Del": 0x75,  # ForwardDelete
    "End": 0x77,
    "PgDown": 0x79,
    "Left": 0x7B,
    "Right": 0x7C,
    "Down": 0x7D,
    "Up": 0x7E,
    "F1": 0x7A,
    "F2": 0x78,
    "F3": 0x63,
    "F4": 0x76,
    "F5": 0x60,
    "F6": 0x61,
    "F7": 0x62,
    "F8": 0x64,
    "F9": 0x65,
    "F10": 0x6D,
    "F11": 0x67,
    "F12": 0x6F,
    "F13": 0x69,
    "F14": 0x6B,
    "F15": 0x71,
    "F16": 0x6A,
    "F17": 0x40,
    "F18": 0x4F,
    "F19": 0x50,
    "F20": 0x5A,
}


def mac_key_code(key: str) -> int | None:
    """None for F21-F24, which Mac keyboards do not have."""
    return _MAC_KEYS.get(key)


def mac_modifiers(shortcut: Shortcut) -> int:
    mask = 0
    for modifier in shortcut.modifiers:
        mask |= _MAC_MODIFIERS[modifier]
    return mask
