"""Hostile requests to paired daemons (real daemons on loopback): no key or another daemon's
keys on /peer/v1, a paired machine's key on the control API, a browser's request, a foreign
Host, a third daemon's certificate where another's was pinned, a replayed pairing code, and
wrong codes past the limit."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from roundhouse.core.peers.pairing import MAX_WRONG
from roundhouse.core.peers.tls import CERT_FILE, pinned_context
from tests.daemon_process import DaemonProcess
from tests.support.peers import open_code, pair, pair_with, peer_daemon, peer_key, peers_of


@dataclass
class Three:
    a: DaemonProcess
    b: DaemonProcess  # paired with a
    c: DaemonProcess  # paired with nobody


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Three]:
    base = tmp_path_factory.mktemp("hostile-peers")
    with (
        peer_daemon(base / "a", "a") as a,
        peer_daemon(base / "b", "b") as b,
        peer_daemon(base / "c", "c") as c,
    ):
        pair(b, a)
        yield Three(a, b, c)


def _listener(daemon: DaemonProcess) -> tuple[str, httpx.Client]:
    """The daemon's peer listener's URL, and a client that trusts exactly its certificate."""
    with daemon.control() as client:
        port = client.get("/api/v1/settings").json()["peers"]["port"]
    cert = (daemon.home.data_dir / CERT_FILE).read_text()
    url = f"https://127.0.0.1:{port}"
    return url, httpx.Client(base_url=url, verify=pinned_context(cert), trust_env=False)


def _bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def _key_of_b_for_a(three: Three) -> str:
    return peer_key(three.b, peers_of(three.b)[0]["id"])


def test_the_peer_routes_need_a_paired_machines_key(three: Three) -> None:
    _, client = _listener(three.a)
    with client:
        key = _key_of_b_for_a(three)
        # The one that must work, so the refusals below mean something.
        assert client.get("/peer/v1/state", headers=_bearer(key)).status_code == 200
        assert client.get("/v1/models", headers=_bearer(key)).status_code == 200
        # The change feed, live: its first event tells a new follower to load everything.
        with client.stream("GET", "/peer/v1/events", headers=_bearer(key)) as feed:
            assert feed.status_code == 200
            first = next(line for line in feed.iter_lines() if line.startswith("event:"))
        assert first == "event: reset"
        assert client.get("/peer/v1/events").status_code == 401
        assert client.get("/peer/v1/state").status_code == 401
        assert client.get("/peer/v1/state", headers=_bearer("x" * 43)).status_code == 401
        # Another daemon's own token, and c's own gateway key, are nothing here.
        assert client.get("/peer/v1/state", headers=_bearer(three.c.token)).status_code == 401
        assert client.get("/peer/v1/state", headers=_bearer(three.a.token)).status_code == 401
        with three.c.control() as control:
            generated = control.post("/api/v1/gateway/key").json()["key"]
        assert client.get("/peer/v1/state", headers=_bearer(generated)).status_code == 401
        assert client.get("/v1/models", headers=_bearer(generated)).status_code == 401
        assert client.get("/v1/models").status_code == 401
        assert client.delete("/peer/v1/pair").status_code == 401
        assert len(peers_of(three.a)) == 1


def test_a_peer_key_reaches_neither_the_settings_nor_the_chats(three: Three) -> None:
    key = _key_of_b_for_a(three)
    # On a's control API (its own address): the daemon's token only.
    for path in ("/api/v1/settings", "/api/v1/chats", "/api/v1/peers"):
        reply = httpx.get(three.a.url + path, headers=_bearer(key), trust_env=False)
        assert reply.status_code == 401, path
    # On the peer listener the control API is not there at all.
    _, client = _listener(three.a)
    with client:
        for path in ("/api/v1/settings", "/api/v1/chats", "/api/v1/peers", "/docs"):
            assert client.get(path, headers=_bearer(key)).status_code == 404, path
        put = client.put("/api/v1/settings", headers=_bearer(key), json={})
        assert put.status_code in (404, 405)


def test_no_browser_and_no_foreign_host(three: Three) -> None:
    url, client = _listener(three.a)
    key = _key_of_b_for_a(three)
    with client:
        for origin in ("https://evil.example", url, "null"):
            reply = client.get("/peer/v1/state", headers={**_bearer(key), "origin": origin})
            assert reply.status_code == 403, origin
        pair_try = client.post("/peer/v1/pair", json={}, headers={"origin": "https://evil.example"})
        assert pair_try.status_code == 403
        site = client.get("/v1/models", headers={**_bearer(key), "sec-fetch-site": "cross-site"})
        assert site.status_code == 403
        host = client.get("/peer/v1/state", headers={**_bearer(key), "host": "evil.example"})
        assert host.status_code == 403


def test_a_wrong_certificate_is_refused(three: Three) -> None:
    """c takes over a's port (as a machine that took a's address would): b, which pinned a's
    certificate, refuses to talk to it and says why."""
    a_id = peers_of(three.b)[0]["id"]
    with three.a.control() as client:
        settings = client.get("/api/v1/settings").json()
        port = settings["peers"]["port"]
        settings["peers"]["listen_host"] = ""
        assert client.put("/api/v1/settings", json=settings, timeout=30).status_code == 200
    with three.c.control() as client:
        mine = client.get("/api/v1/settings").json()
        old_port = mine["peers"]["port"]
        mine["peers"]["port"] = port
        assert client.put("/api/v1/settings", json=mine, timeout=30).status_code == 200
    try:
        status = peers_of(three.b, check=True)[0]
        assert status["reachable"] is False
        assert "different certificate" in status["error"]
        with three.b.control() as client:
            reply = client.get(f"/api/v1/peers/{a_id}/state", timeout=60)
        assert reply.status_code == 502 and "different certificate" in reply.json()["detail"]
    finally:
        with three.c.control() as client:
            mine["peers"]["port"] = old_port
            assert client.put("/api/v1/settings", json=mine, timeout=30).status_code == 200
        with three.a.control() as client:
            settings["peers"]["listen_host"] = "127.0.0.1"
            assert client.put("/api/v1/settings", json=settings, timeout=30).status_code == 200
    assert peers_of(three.b, check=True)[0]["reachable"] is True


def test_a_used_code_cannot_be_replayed(three: Three) -> None:
    offer = open_code(three.a)
    first = pair_with(three.c, offer["port"], offer["code"])
    assert first.status_code == 201, first.text
    again = pair_with(three.c, offer["port"], offer["code"])
    assert again.status_code == 403 and "No pairing code is open" in again.json()["detail"]
    c_id = next(p["id"] for p in peers_of(three.a) if p["name"] == "c")
    with three.a.control() as client:
        assert client.delete(f"/api/v1/peers/{c_id}", timeout=60).status_code == 200
    assert [p["name"] for p in peers_of(three.a)] == ["b"]


def test_wrong_codes_void_the_code(three: Three) -> None:
    offer = open_code(three.a)
    right = offer["code"]
    wrong = ("0" if right[0] != "0" else "1") + right[1:]
    for attempt in range(MAX_WRONG):
        reply = pair_with(three.c, offer["port"], wrong)
        assert reply.status_code == 403, reply.text
        words = "too many times" if attempt == MAX_WRONG - 1 else "Wrong pairing code"
        assert words in reply.json()["detail"]
    late = pair_with(three.c, offer["port"], right)
    assert late.status_code == 403 and "No pairing code is open" in late.json()["detail"]
    assert [p["name"] for p in peers_of(three.a)] == ["b"]
    assert peers_of(three.c) == []


def test_an_oversize_pairing_request_is_refused(three: Three) -> None:
    _, client = _listener(three.a)
    with client:
        reply = client.post(
            "/peer/v1/pair",
            content=b"{" + b" " * 100_000 + b"}",
            headers={"content-type": "application/json"},
        )
    assert reply.status_code == 413


def test_a_daemon_cannot_pair_with_itself(three: Three) -> None:
    offer = open_code(three.c)
    reply = pair_with(three.c, offer["port"], offer["code"])
    assert reply.status_code == 403 and "this daemon itself" in reply.json()["detail"]
    assert peers_of(three.c) == []
