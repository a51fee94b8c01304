"""The app's stylesheet: resources/styles/app.qss with the tokens of a scheme filled in."""

from __future__ import annotations

from functools import cache
from string import Template

from roundhouse.base.resources import resource_path
from roundhouse.gui.theme import tokens
from roundhouse.gui.theme.assets import glyph_path
from roundhouse.gui.theme.tokens import Scheme


@cache
def _template() -> Template:
    return Template(resource_path("styles", "app.qss").read_text(encoding="utf-8"))


def _pt(base_pt: float, factor: float) -> str:
    return f"{base_pt * factor:.1f}"


def build_stylesheet(scheme: Scheme, base_pt: float) -> str:
    """The stylesheet for `scheme`, its text sizes scaled from `base_pt` (the application
    font's point size, which follows the OS's text-size setting).

    A placeholder the tokens do not fill raises KeyError: a typo in app.qss fails the tests
    rather than leaving a rule without its colour."""
    roles = tokens.colours(scheme)
    values: dict[str, str] = dict(roles.roles())
    values.update(
        title_pt=_pt(base_pt, tokens.TYPE_TITLE),
        section_pt=_pt(base_pt, tokens.TYPE_SECTION),
        small_pt=_pt(base_pt, tokens.TYPE_SMALL),
        nav_pt=_pt(base_pt, tokens.TYPE_NAV),
        space_xs=str(tokens.SPACE_XS),
        space_s=str(tokens.SPACE_S),
        space_m=str(tokens.SPACE_M),
        space_l=str(tokens.SPACE_L),
        space_xl=str(tokens.SPACE_XL),
        radius_s=str(tokens.RADIUS_S),
        radius_m=str(tokens.RADIUS_M),
        radius_l=str(tokens.RADIUS_L),
        # Room above a card for its title, which sits on the card's top edge.
        title_gap=str(round(base_pt * 1.4) + tokens.SPACE_S),
        check_image=glyph_path("check", roles.accent_text),
        minus_image=glyph_path("minus", roles.accent_text),
        arrow_down=glyph_path("chevron-down", roles.text),
        arrow_up=glyph_path("chevron-up", roles.text),
        arrow_down_disabled=glyph_path("chevron-down", roles.text_disabled),
        arrow_up_disabled=glyph_path("chevron-up", roles.text_disabled),
    )
    return _template().substitute(values)
