"""WCAG 2 contrast between two colours: what the tests hold every visible text to."""

from __future__ import annotations

# Body text must reach 4.5:1 against what it is drawn on (WCAG 2.1, 1.4.3, level AA).
BODY_TEXT_MINIMUM = 4.5


def _channel(value: int) -> float:
    c = value / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def luminance(rgb: tuple[int, int, int]) -> float:
    r, g, b = (_channel(v) for v in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def hex_rgb(colour: str) -> tuple[int, int, int]:
    value = colour.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def contrast_ratio(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """From 1 (the same) to 21 (black on white)."""
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)
