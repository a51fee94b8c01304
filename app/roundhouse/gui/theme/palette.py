"""A QPalette from a scheme's colour roles, for the Fusion style under the stylesheet."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette

from roundhouse.gui.theme.tokens import Colours

Role = QPalette.ColorRole
Group = QPalette.ColorGroup


def build_palette(colours: Colours) -> QPalette:
    """Every role a widget without a stylesheet rule reads (charts, item views, the chat's
    message backgrounds) comes from the tokens too."""
    palette = QPalette()
    roles = {
        Role.Window: colours.window,
        Role.WindowText: colours.text,
        Role.Base: colours.surface,
        # Read by the chat's user messages only: item views take alternate rows from app.qss.
        Role.AlternateBase: colours.bubble,
        Role.Text: colours.text,
        Role.Button: colours.surface,
        Role.ButtonText: colours.text,
        Role.BrightText: colours.danger_text,
        Role.ToolTipBase: colours.surface,
        Role.ToolTipText: colours.text,
        Role.PlaceholderText: colours.text_muted,
        Role.Highlight: colours.accent,
        Role.HighlightedText: colours.accent_text,
        Role.Link: colours.link,
        Role.LinkVisited: colours.link,
        Role.Light: colours.surface,
        Role.Midlight: colours.surface_alt,
        Role.Mid: colours.border,
        Role.Dark: colours.border,
        Role.Shadow: colours.border,
    }
    for role, colour in roles.items():
        palette.setColor(role, QColor(colour))
    for role in (Role.WindowText, Role.Text, Role.ButtonText):
        palette.setColor(Group.Disabled, role, QColor(colours.text_disabled))
    return palette
