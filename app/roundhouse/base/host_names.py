"""A host name or address in one canonical spelling, so two spellings of a host compare equal."""

from __future__ import annotations

import ipaddress
import re

# Letters, digits, '-' and '_' (some real hosts carry one) in dot-separated labels of at most
# 63 characters: what DNS resolves. Anything else (a scheme, a path, a port, user info, a
# wildcard, a space) is not a host name.
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")


def canonical_host(name: str) -> str | None:
    """`name` in lower case, a non-ASCII name as IDNA (`bücher.de` is `xn--bcher-kva.de`),
    an IPv6 address without brackets; None when it is not a host name or address."""
    text = name.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return ipaddress.ip_address(text).compressed
    except ValueError:
        pass
    if not text.isascii():
        try:
            text = text.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    if not text or len(text) > 253:
        return None
    if all(_LABEL.fullmatch(label) for label in text.split(".")):
        return text
    return None
