"""Whether a host name or address is this machine's loopback, the same way everywhere."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback_host(host: str) -> bool:
    """`localhost`, 127.0.0.0/8, ::1 (and 127.x written as IPv6, ::ffff:127.0.0.1); a bare
    or bracketed host, with or without an IPv6 zone."""
    text = host.strip().strip("[]").lower()
    if text in _LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def key_sent_in_clear(url: str) -> bool:
    """Whether a key sent to `url` crosses a network unencrypted: plain http:// to a host
    other than this machine's loopback."""
    parts = urlsplit(url.strip() if "://" in url else "http://" + url.strip())
    return parts.scheme == "http" and not is_loopback_host(parts.hostname or "")
