"""HTTP clients to the engines: pooled, proxy-free, TLS checked except on loopback."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

import httpx

from roundhouse.api.instances import InstanceInfo

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})
# Connecting is quick or the engine is gone; a reply may take minutes to start on a long
# prompt, so reading waits long, but not forever on an engine that hangs.
TIMEOUT = httpx.Timeout(connect=10.0, read=600.0, write=60.0, pool=None)
# Many concurrent streams each hold a connection; keep enough of them alive for reuse. An
# idle one is dropped after 2 s, well before llama-server's (cpp-httplib's) 5 s keep-alive
# ends it from the other side: reusing a connection the engine is closing fails the request.
LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=64, keepalive_expiry=2.0)


def is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Upstream:
    """One pool for engines on this machine and one for endpoints elsewhere."""

    def __init__(self, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._transport = transport
        self._local: httpx.AsyncClient | None = None
        self._remote: httpx.AsyncClient | None = None

    def client_for(self, info: InstanceInfo) -> httpx.AsyncClient:
        if is_loopback(info.base_url):
            if self._local is None:
                # trust_env=False: a proxy from HTTP(S)_PROXY must never see loopback
                # traffic. verify=False: loopback engines speak plain http, and building the
                # default TLS context costs time for nothing.
                self._local = httpx.AsyncClient(
                    trust_env=False,
                    verify=False,
                    timeout=TIMEOUT,
                    limits=LIMITS,
                    transport=self._transport,
                )
            return self._local
        if self._remote is None:
            # An endpoint on another machine: its certificate is checked, and still no
            # proxy from the environment, since the user gave its address directly.
            self._remote = httpx.AsyncClient(
                trust_env=False, timeout=TIMEOUT, limits=LIMITS, transport=self._transport
            )
        return self._remote

    async def aclose(self) -> None:
        for client in (self._local, self._remote):
            if client is not None:
                await client.aclose()
        self._local = self._remote = None
