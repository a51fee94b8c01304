"""A global key combination as the settings keep it ("Ctrl+Shift+Space"), parsed and checked.

The text is Qt's portable form (`QKeySequence.toString(PortableText)`), so the Settings page's
key editor writes it and the OS layers (X11, Windows, macOS) read it without Qt. As in Qt,
"Ctrl" is the Command key on macOS and "Meta" is Control there (the Windows or Super key
elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

DEFAULT_QUICK_CHAT_KEY = "Ctrl+Shift+Space"


class Modifier(StrEnum):
    CTRL = "Ctrl"
    SHIFT = "Shift"
    ALT = "Alt"
    META = "Meta"


# Named keys, as Qt's portable text spells them; letters, digits and F1-F24 are added below.
NAMED_KEYS = (
    "Space",
    "Return",
    "Enter",
    "Tab",
    "Esc",
    "Backspace",
    "Ins",
    "Del",
    "Home",
    "End",
    "PgUp",
    "PgDown",
    "Left",
    "Up",
    "Right",
    "Down",
)
# The punctuation of a US layout's main block, which every OS layer maps.
PUNCTUATION = ",.;'[]\\-=`/"
FUNCTION_KEYS = tuple(f"F{n}" for n in range(1, 25))
LETTERS = tuple(chr(c) for c in range(ord("A"), ord("Z") + 1))
DIGITS = tuple(str(d) for d in range(10))
KEYS = frozenset(NAMED_KEYS + FUNCTION_KEYS + LETTERS + DIGITS + tuple(PUNCTUATION))
_ALIASES = {
    "escape": "Esc",
    "delete": "Del",
    "insert": "Ins",
    "pageup": "PgUp",
    "pagedown": "PgDown",
}
_MODIFIER_ALIASES = {
    "ctrl": Modifier.CTRL,
    "control": Modifier.CTRL,
    "shift": Modifier.SHIFT,
    "alt": Modifier.ALT,
    "meta": Modifier.META,
    "super": Modifier.META,
    "win": Modifier.META,
}


@dataclass(frozen=True)
class Shortcut:
    """One key with its modifiers; `str()` gives the portable text back."""

    modifiers: frozenset[Modifier]
    key: str

    def __str__(self) -> str:
        ordered = [m.value for m in Modifier if m in self.modifiers]
        return "+".join([*ordered, self.key])


def parse_shortcut(text: str) -> Shortcut:
    """`Ctrl+Shift+Space` as a Shortcut; a ValueError in words for anything else."""
    clean = text.strip()
    if not clean:
        raise ValueError("the shortcut is empty: press a key with Ctrl, Alt or Meta")
    if "," in clean.replace("+,", "+"):
        raise ValueError(f"{clean!r} is a sequence of keys: a global shortcut is one key")
    *names, last = clean.split("+")
    modifiers: set[Modifier] = set()
    for name in names:
        modifier = _MODIFIER_ALIASES.get(name.strip().lower())
        if modifier is None:
            raise ValueError(f"{clean!r}: {name!r} is not a modifier; use Ctrl, Shift, Alt or Meta")
        modifiers.add(modifier)
    key = _key(last.strip())
    if key is None:
        raise ValueError(
            f"{clean!r}: the key {last.strip()!r} cannot be a global shortcut; use a letter, "
            "a digit, F1-F24, Space, Return, Tab, an arrow or common punctuation"
        )
    if not modifiers - {Modifier.SHIFT} and key not in FUNCTION_KEYS:
        # A bare letter or Space grabbed for the whole desktop would stop everyone typing it.
        raise ValueError(
            f"{clean!r} has no Ctrl, Alt or Meta: a global shortcut needs one of them "
            "(a function key F1-F24 may stand alone)"
        )
    return Shortcut(frozenset(modifiers), key)


def _key(name: str) -> str | None:
    if len(name) == 1:
        upper = name.upper()
        return upper if upper in KEYS else None
    for known in NAMED_KEYS + FUNCTION_KEYS:
        if known.lower() == name.lower():
            return known
    return _ALIASES.get(name.lower())
