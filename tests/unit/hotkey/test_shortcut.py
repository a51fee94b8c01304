"""The quick chat key as the settings keep it: parsed, written back, refused in words."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from roundhouse.api.settings import UiSettings
from roundhouse.api.shortcut import Modifier, parse_shortcut


@pytest.mark.parametrize(
    ("text", "modifiers", "key"),
    [
        ("Ctrl+Shift+Space", {Modifier.CTRL, Modifier.SHIFT}, "Space"),
        ("shift+ctrl+k", {Modifier.CTRL, Modifier.SHIFT}, "K"),
        ("Meta+Alt+F12", {Modifier.META, Modifier.ALT}, "F12"),
        ("F9", set(), "F9"),
        ("Ctrl+,", {Modifier.CTRL}, ","),
        ("Super+Escape", {Modifier.META}, "Esc"),
    ],
)
def test_a_key_is_parsed(text: str, modifiers: set[Modifier], key: str) -> None:
    shortcut = parse_shortcut(text)
    assert shortcut.modifiers == frozenset(modifiers)
    assert shortcut.key == key


def test_the_text_is_written_in_one_order() -> None:
    assert str(parse_shortcut("Shift+Ctrl+Space")) == "Ctrl+Shift+Space"
    assert str(parse_shortcut("alt+meta+ctrl+shift+a")) == "Ctrl+Shift+Alt+Meta+A"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty"),
        ("A", "needs one of them"),
        ("Shift+Space", "needs one of them"),
        ("Ctrl+A, Ctrl+B", "one key"),
        ("Hyper+A", "not a modifier"),
        ("Ctrl+Print", "cannot be a global shortcut"),
    ],
)
def test_a_bad_key_is_refused_in_words(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_shortcut(text)


def test_the_settings_keep_the_key_checked() -> None:
    assert UiSettings().quick_chat_key == "Ctrl+Shift+Space"
    assert UiSettings().quick_chat_global is True
    assert UiSettings(quick_chat_key="ctrl+alt+q").quick_chat_key == "Ctrl+Alt+Q"
    with pytest.raises(ValidationError, match="needs one of them"):
        UiSettings(quick_chat_key="Q")
