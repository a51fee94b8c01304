"""Colour roles for code that paints or formats by hand (table cells, delegates, rich text):
looked up when used, so they follow a theme switch."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TypeVar

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget

from roundhouse.gui.theme.manager import current_colours

K = TypeVar("K")


def role_hex(role: str) -> str:
    """The #rrggbb of `role` (a field of tokens.Colours) in the scheme in force."""
    value = current_colours().roles().get(role)
    if value is None:
        raise KeyError(f"no colour role {role!r}")
    return value


def role_colour(role: str) -> QColor:
    return QColor(role_hex(role))


class RoleMap(Mapping[K, str]):
    """A mapping of keys (a level, a tone) to colour roles that answers each key with the
    role's #rrggbb in the scheme in force: a drop-in for a dict of fixed colours."""

    def __init__(self, roles: Mapping[K, str]) -> None:
        self._roles = dict(roles)

    def __getitem__(self, key: K) -> str:
        return role_hex(self._roles[key])

    def __iter__(self) -> Iterator[K]:
        return iter(self._roles)

    def __len__(self) -> int:
        return len(self._roles)


def set_tone(widget: QWidget, tone: str | None) -> None:
    """Colour a label by what it says (good, warn, bad, unknown; None: the usual text), from
    app.qss's `QLabel[tone=…]` rules, in the theme in force."""
    if widget.property("tone") == tone:
        return
    widget.setProperty("tone", tone)
    # A dynamic property's new value reaches the stylesheet only when polished again.
    widget.style().unpolish(widget)
    widget.style().polish(widget)
