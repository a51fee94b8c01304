"""What every OS layer of the global key offers, and the words for a key another program took."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from roundhouse.api.shortcut import Shortcut

WHERE_TO_CHANGE = "Settings › Quick chat key"


def taken_words(shortcut: Shortcut, holder: str) -> str:
    """The "taken" message: which key, who says so, what to do."""
    return (
        f"{shortcut} is taken: {holder}. Choose another key in {WHERE_TO_CHANGE}, or free "
        f"{shortcut} in the program that uses it; inside Roundhouse's windows it still opens "
        "quick chat."
    )


class HotkeyBackend(QObject):
    """One OS's global key: `register` answers None when the key is held, else why not."""

    activated = Signal()
    # A layer that asks another process (the desktop's portal) answers later: "" when the
    # key is bound, else why not in words.
    settled = Signal(str)
    asynchronous = False
    # How the desktop describes the trigger it bound, where it may differ from the one asked.
    bound_as = ""
    # How this OS's layer is named to the user ("X11", "Windows", ...).
    name = ""

    def register(self, shortcut: Shortcut) -> str | None:
        raise NotImplementedError

    def unregister(self) -> None:
        raise NotImplementedError


class NoGlobalKey(HotkeyBackend):
    """A platform with no global key (offscreen, an unknown Qt platform): says so in words."""

    name = "none"

    def __init__(self, reason: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.reason = reason

    def register(self, shortcut: Shortcut) -> str | None:
        return self.reason

    def unregister(self) -> None:
        pass
