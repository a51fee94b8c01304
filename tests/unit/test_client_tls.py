"""The client loads the CA bundle only for a daemon on https; on http its context trusts no one."""

from __future__ import annotations

import asyncio
import ssl

from roundhouse.client.client import DaemonClient


def _context(client: DaemonClient) -> ssl.SSLContext:
    # httpx keeps the context it was given in its connection pool.
    context = client._http._transport._pool._ssl_context  # type: ignore[attr-defined]
    assert isinstance(context, ssl.SSLContext)
    return context


def test_only_an_https_daemon_costs_the_ca_bundle() -> None:
    plain = DaemonClient("http://127.0.0.1:1", "token")
    tls = DaemonClient("https://127.0.0.1:1", "token")
    try:
        context = _context(plain)
        assert context.cert_store_stats()["x509_ca"] == 0
        # Still verifying: a redirect to https could not pass unchecked.
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
        context = _context(tls)
        assert context.cert_store_stats()["x509_ca"] > 0
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    finally:
        asyncio.run(plain.aclose())
        asyncio.run(tls.aclose())
