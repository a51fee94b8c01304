"""Load the app's SVG icons and the stylesheet from the resources folder.

The UI icons are Lucide's (ISC licence, resources/icons/ui/LICENSE): outline SVGs drawn in
`currentColor`, recoloured here for the scheme in force as they load.
"""

from __future__ import annotations

import weakref
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING

from PySide6.QtGui import QIcon, QPalette

from roundhouse.base.resources import resource_path

if TYPE_CHECKING:
    from PySide6.QtGui import QPixmap
    from PySide6.QtWidgets import QAbstractButton

    from roundhouse.gui.theme.tokens import Scheme

# Sizes drawn for each UI icon: Qt picks the nearest and scales the rest.
ICON_SIZES = (16, 20, 24, 32, 48)


class TrayState(StrEnum):
    """What the tray icon says: the connection to the daemon, and whether models are served."""

    # Not connected (yet): looking for the daemon, or starting it.
    IDLE = "idle"
    # Connected, nothing served.
    CONNECTED = "connected"
    # Connected, at least one instance ready.
    SERVING = "serving"
    # The daemon cannot be reached, or an instance failed.
    ERROR = "error"


def app_icon() -> QIcon:
    return QIcon(str(resource_path("icons", "roundhouse.svg")))


def is_dark(palette: QPalette) -> bool:
    """Whether a palette is dark, so a glyph drawn on it must be light."""
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def tray_icon(state: TrayState, *, dark_panel: bool) -> QIcon:
    # "light"/"dark" name the panel the glyph sits on, not the glyph's own colour.
    theme = "dark" if dark_panel else "light"
    return QIcon(str(resource_path("icons", f"tray-{theme}-{state.value}.svg")))


@cache
def _svg(name: str) -> str:
    return resource_path("icons", "ui", f"{name}.svg").read_text(encoding="utf-8")


def _render(svg: str, colour: str, size: int) -> QPixmap:
    # Imported on first use: the window's first paint needs no UI icon (and the Qt
    # namespace's first use costs ~25 ms).
    from PySide6.QtCore import QByteArray, Qt
    from PySide6.QtGui import QImage, QPainter, QPixmap
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(QByteArray(svg.replace("currentColor", colour).encode()))
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    return QPixmap.fromImage(image)


@cache
def ui_icon(name: str, scheme: Scheme) -> QIcon:
    """Lucide's `name` in the text colour of `scheme`; selected (the sidebar's current
    page) in the colour of text on the accent, disabled in the disabled text colour."""
    svg = _svg(name)
    from roundhouse.gui.theme.tokens import colours

    roles = colours(scheme)
    icon = QIcon()
    for mode, colour in (
        (QIcon.Mode.Normal, roles.text),
        (QIcon.Mode.Active, roles.text),
        (QIcon.Mode.Selected, roles.accent_text),
        (QIcon.Mode.Disabled, roles.text_disabled),
    ):
        for size in ICON_SIZES:
            icon.addPixmap(_render(svg, colour, size), mode)
    return icon


# A badge's icon by its tone; neutral and unknown have none (their words say enough).
TONE_ICONS = {
    "good": "circle-check",
    "warn": "triangle-alert",
    "bad": "circle-x",
    "info": "info",
}


@cache
def tinted_icon(name: str, colour: str) -> QIcon:
    """Lucide's `name` in one colour (a badge's icon in its text's colour)."""
    svg = _svg(name)
    icon = QIcon()
    for size in ICON_SIZES:
        icon.addPixmap(_render(svg, colour, size))
    return icon


def tone_icon(tone: str, palette: QPalette, name: str | None = None) -> QIcon:
    """The icon of a badge of `tone` (or `name`), in the palette's text colour."""
    chosen = name or TONE_ICONS.get(tone)
    if chosen is None:
        return QIcon()
    return tinted_icon(chosen, palette.color(QPalette.ColorRole.WindowText).name())


# Buttons given a UI icon, redrawn when the theme changes (weakly held: a closed dialog's
# buttons go with it).
_iconed: weakref.WeakKeyDictionary[QAbstractButton, str] = weakref.WeakKeyDictionary()
_following: list[bool] = []


def set_icon(button: QAbstractButton, name: str) -> None:
    """Give `button` Lucide's `name` in the theme's colours, kept across theme switches."""
    from PySide6.QtWidgets import QApplication

    from roundhouse.gui.theme.manager import current_scheme, theme_manager

    app = QApplication.instance()
    if not _following and isinstance(app, QApplication):
        theme_manager(app).changed.connect(_redraw_icons)
        _following.append(True)
    _iconed[button] = name
    button.setIcon(ui_icon(name, current_scheme()))


def _redraw_icons(_scheme: str) -> None:
    from shiboken6 import isValid

    from roundhouse.gui.theme.manager import current_scheme

    scheme = current_scheme()
    for button, name in list(_iconed.items()):
        # Qt may have deleted a button whose Python side lives on (a closed page's field).
        if isValid(button):
            button.setIcon(ui_icon(name, scheme))
        else:
            del _iconed[button]
