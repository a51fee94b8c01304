"""Load the app's SVG icons and the stylesheet from the resources folder."""

from __future__ import annotations

from enum import StrEnum

from PySide6.QtGui import QIcon, QPalette

from roundhouse.base.resources import resource_path


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


def stylesheet() -> str:
    return resource_path("styles", "app.qss").read_text(encoding="utf-8")
