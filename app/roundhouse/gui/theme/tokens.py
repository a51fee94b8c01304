"""Design tokens: the spacing scale, type scale, radii and the colour roles of each scheme.

Colours are named by what they are for (text, muted text, a warning's fill), never by hue,
so the stylesheet and the widgets say `warning_text` and both schemes answer. Text sizes
are factors of the application font's point size: the OS's text-size setting scales them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple


class Scheme(StrEnum):
    """The two colour schemes the app draws."""

    LIGHT = "light"
    DARK = "dark"


# Spacing in device-independent pixels: a 4-px grid.
SPACE_XS = 4
SPACE_S = 8
SPACE_M = 12
SPACE_L = 16
SPACE_XL = 24

# Radii in pixels: controls, cards and the pill of a badge (a pill is half its height).
RADIUS_S = 4
RADIUS_M = 6
RADIUS_L = 10

# The type scale, as factors of the application font's point size (never pixels: the OS's
# text-size setting must reach every label).
TYPE_SMALL = 0.9
TYPE_BODY = 1.0
TYPE_SECTION = 1.15
TYPE_TITLE = 1.6
TYPE_NAV = 1.05


class Colours(NamedTuple):
    """The colour roles, each a #rrggbb string. (A NamedTuple: importing dataclasses costs
    ~2 ms before the first paint.)"""

    window: str  # the page behind everything
    surface: str  # inputs, tables, cards
    surface_alt: str  # alternate table rows, a card's header
    sidebar: str  # the navigation column
    text: str  # body text on window, surface and sidebar
    text_muted: str  # hints and secondary text: still 4.5:1 on window and surface
    text_disabled: str  # disabled controls (not held to the contrast rule, as WCAG says)
    border: str  # separators, frames of inputs and cards
    accent: str  # the selected item, the default button, links' hue
    accent_text: str  # text on accent
    focus: str  # the focus ring
    link: str  # links in text
    info_fill: str
    info_border: str
    info_text: str
    success_fill: str
    success_border: str
    success_text: str
    warning_fill: str
    warning_border: str
    warning_text: str
    danger_fill: str
    danger_border: str
    danger_text: str
    neutral_fill: str
    neutral_border: str
    neutral_text: str
    code_fill: str  # code blocks in the chat
    bubble: str  # the user's messages in the chat (the palette's AlternateBase)

    def roles(self) -> dict[str, str]:
        """Every role by name: the stylesheet's placeholders."""
        return dict(self._asdict())


LIGHT = Colours(
    window="#f5f6f8",
    surface="#ffffff",
    surface_alt="#f0f2f5",
    sidebar="#e9ecf1",
    text="#1b1f24",
    text_muted="#55606d",
    text_disabled="#9aa1ab",
    border="#d3d8df",
    accent="#2457c5",
    accent_text="#ffffff",
    focus="#2f6fde",
    link="#1f4fb4",
    info_fill="#e8f0fd",
    info_border="#9fbde3",
    info_text="#12305c",
    success_fill="#e3f4e4",
    success_border="#8fcb93",
    success_text="#1b5e20",
    warning_fill="#fff3d6",
    warning_border="#e0b858",
    warning_text="#5c3d00",
    danger_fill="#fdecea",
    danger_border="#e3a59f",
    danger_text="#8c1d18",
    neutral_fill="#eef0f3",
    neutral_border="#c5cbd3",
    neutral_text="#2b3138",
    code_fill="#f3f4f6",
    bubble="#e4ecfb",
)

DARK = Colours(
    window="#1a1c21",
    surface="#23262d",
    surface_alt="#2a2e36",
    sidebar="#141619",
    text="#e7e9ec",
    text_muted="#a7afba",
    text_disabled="#6b727c",
    border="#3b414b",
    accent="#4f8ef7",
    accent_text="#0a1424",
    focus="#7aa9ff",
    link="#8ab4ff",
    info_fill="#17283f",
    info_border="#35557f",
    info_text="#cfe0fb",
    success_fill="#16301c",
    success_border="#2f6a3a",
    success_text="#bfe8c4",
    warning_fill="#33280f",
    warning_border="#7a5d1c",
    warning_text="#f5dca0",
    danger_fill="#3a1c1b",
    danger_border="#84403b",
    danger_text="#f6c6c1",
    neutral_fill="#2c3038",
    neutral_border="#4a515c",
    neutral_text="#d6dae0",
    code_fill="#1e2127",
    bubble="#1f2d45",
)


def colours(scheme: Scheme) -> Colours:
    return DARK if scheme == Scheme.DARK else LIGHT
