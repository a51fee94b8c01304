"""The chat's link decision: http(s) with a server opens after the address is shown; files,
shares, scripts, data and look-alike tricks are refused with a reason."""

from __future__ import annotations

import pytest

from roundhouse.gui.link_policy import MAX_LINK_CHARS, decide_link


@pytest.mark.parametrize(
    "href",
    [
        "https://example.com",
        "http://example.com/a/b?c=d#e",
        "HTTPS://Example.COM/path",
        "https://127.0.0.1:8080/x",
        "https://[::1]/",
        "https://xn--80ak6aa92e.com/",  # already in plain letters: shown as it is
    ],
)
def test_web_links_open_showing_their_whole_address(href: str) -> None:
    decision = decide_link(href)
    assert decision.allowed and decision.reason == ""
    assert decision.address == href and decision.href == href


@pytest.mark.parametrize(
    ("href", "words"),
    [
        ("file:///etc/passwd", "Links to files"),
        ("FILE:///C:/Users/me/secret.txt", "Links to files"),
        ("file://server/share/x.png", "Links to files"),
        ("\\\\server\\share\\x.png", "network shares"),
        ("//server/share/x.png", "network shares"),
        ("https://good.example\\@evil.example", "network shares"),
        ("javascript:alert(1)", "'javascript:' link"),
        ("JavaScript:alert(1)", "'javascript:' link"),
        ("data:text/html,<script>alert(1)</script>", "'data:' link"),
        ("vbscript:msgbox", "'vbscript:' link"),
        ("smb://server/share", "'smb:' link"),
        ("ms-settings:privacy", "'ms-settings:' link"),
        ("mailto:someone@example.com", "'mailto:' link"),
        ("C:\\Windows\\System32\\calc.exe", "network shares"),  # a backslash path
        ("C:/Windows/System32/calc.exe", "'c:' link"),
        ("relative/page.html", "not a web address"),
        ("", "no address"),
        ("https://", "no web server"),
        ("https:///path-only", "no web server"),
        ("https://bank.example@evil.example/", "user name"),
        ("https://user:pw@example.com/", "user name"),
        ("https://example.com:notaport/", "not valid"),
        ("https://example.com/a b", "spaces or invisible"),
        (" https://example.com", "spaces or invisible"),
        ("https://example.com/\u202egnp.exe", "spaces or invisible"),  # right-to-left override
        ("https://exa\u200bmple.com/", "spaces or invisible"),  # zero-width space
        ("https://example.com/\n", "spaces or invisible"),
        ("https://example.com/" + "a" * MAX_LINK_CHARS, "longer than"),
    ],
)
def test_everything_else_is_refused_with_a_reason(href: str, words: str) -> None:
    decision = decide_link(href)
    assert not decision.allowed and decision.address == ""
    assert words in decision.reason, decision.reason


def test_a_server_name_with_look_alike_letters_is_also_shown_in_plain_letters() -> None:
    # Cyrillic letters that read as "apple".
    decision = decide_link("https://аррӏе.com/login")
    assert decision.allowed
    assert decision.address.startswith("https://аррӏе.com/login")
    assert "xn--" in decision.address and "plain letters" in decision.address
