"""Which links in a model's reply may open, and the words the user sees before one does.

A reply is text a model wrote, from whatever it was given to read: a `file:` link would open
a file on this computer, a Windows share (`\\\\host\\share`, `file://host/...`) would send the
user's Windows sign-in to that host, and `javascript:` or `data:` have no business in a
browser opened from here. So only http and https links open, each after the user has seen
its whole address; the rest are refused with a short reason. No Qt here: the decision is
tested on its own, and the chat view only shows it.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

WEB_SCHEMES = frozenset({"http", "https"})
# Longer addresses cannot be shown whole in a dialog, so they are not opened.
MAX_LINK_CHARS = 2048
# Control, format (bidi overrides, zero-width) and separator characters: an address that
# holds one can read as another on screen.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})


@dataclass(frozen=True)
class LinkDecision:
    """`href` may open (`allowed`), showing `address`; or it is refused for `reason`."""

    href: str
    allowed: bool
    address: str = ""
    reason: str = ""


def decide_link(href: str) -> LinkDecision:
    """Whether the chat opens `href`, and the words to show: the address, or the refusal."""

    def refuse(reason: str) -> LinkDecision:
        return LinkDecision(href, False, reason=reason)

    if not href:
        return refuse("The link has no address.")
    if len(href) > MAX_LINK_CHARS:
        return refuse(
            f"The link's address is longer than {MAX_LINK_CHARS} characters, too long to "
            "show whole; it is not opened."
        )
    if any(unicodedata.category(c) in _HIDDEN_CATEGORIES for c in href):
        return refuse(
            "The link's address holds spaces or invisible characters, which can make it "
            "read as another address; it is not opened."
        )
    if "\\" in href or href.startswith("//"):
        return refuse(
            "Links to network shares (\\\\server\\share) are not opened from chat: opening "
            "one can send your Windows sign-in to that server."
        )
    parts = urlsplit(href)
    scheme = parts.scheme.lower()
    if scheme == "file":
        return refuse(
            "Links to files (file:) are not opened from chat: a reply could point at any "
            "file on this computer, or at a network share."
        )
    if not scheme:
        return refuse("The link is not a web address (it does not start with https://).")
    if scheme not in WEB_SCHEMES:
        return refuse(
            f"Only web links (http:// and https://) open from chat; this one is a '{scheme}:' link."
        )
    try:
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return refuse("The link's address is not valid.")
    if not host:
        return refuse("The link names no web server.")
    if parts.username is not None or parts.password is not None:
        return refuse(
            "The link puts a user name before its server (name@server), a way to make one "
            "server look like another; it is not opened."
        )
    return LinkDecision(href, True, address=_shown(href, host))


def _shown(href: str, host: str) -> str:
    """The address as the user reads it: whole, with a non-ASCII server name also spelled
    as the browser will send it (a look-alike letter shows as xn--...)."""
    if host.isascii():
        return href
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        ascii_host = "(a name the browser may not accept)"
    return f"{href}\n\nThe server's name in plain letters: {ascii_host}"
