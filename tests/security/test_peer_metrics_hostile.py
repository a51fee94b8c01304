"""Hostile requests to the peer metrics route (/peer/v1/metrics/{instance}) of a real daemon
on loopback: only a paired machine's key reads it, never a bare request, another daemon's
token or key, nor the daemon's own gateway key; and it reads this machine's instances only."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from roundhouse.core.peers.tls import CERT_FILE, pinned_context
from tests.daemon_process import DaemonProcess
from tests.support.peers import pair, peer_daemon, peer_key, peers_of


@dataclass
class Three:
    a: DaemonProcess
    b: DaemonProcess  # paired with a
    c: DaemonProcess  # paired with nobody


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Three]:
    base = tmp_path_factory.mktemp("hostile-peer-metrics")
    with (
        peer_daemon(base / "a", "a") as a,
        peer_daemon(base / "b", "b") as b,
        peer_daemon(base / "c", "c") as c,
    ):
        pair(b, a)
        yield Three(a, b, c)


def _listener(daemon: DaemonProcess) -> httpx.Client:
    """A client of the daemon's peer listener that trusts exactly its certificate."""
    with daemon.control() as client:
        port = client.get("/api/v1/settings").json()["peers"]["port"]
    cert = (daemon.home.data_dir / CERT_FILE).read_text()
    return httpx.Client(
        base_url=f"https://127.0.0.1:{port}", verify=pinned_context(cert), trust_env=False
    )


def _bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


PATH = "/peer/v1/metrics/llama-cpp-1"


def test_the_peer_metrics_route_needs_a_paired_machines_key(three: Three) -> None:
    key = peer_key(three.b, peers_of(three.b)[0]["id"])
    with _listener(three.a) as client:
        # The paired machine's key reaches the route: a's instance is not there, said so.
        reached = client.get(PATH, headers=_bearer(key))
        assert reached.status_code == 404, reached.text
        assert "runs no instance" in reached.json()["detail"]
        assert client.get(PATH).status_code == 401
        assert client.get(PATH, headers=_bearer("x" * 43)).status_code == 401
        assert client.get(PATH, headers=_bearer(three.a.token)).status_code == 401
        assert client.get(PATH, headers=_bearer(three.c.token)).status_code == 401
        # a's own gateway key opens the gateway's routes here, never /peer/v1.
        with three.a.control() as control:
            gateway_key = control.post("/api/v1/gateway/key").json()["key"]
        assert client.get("/v1/models", headers=_bearer(gateway_key)).status_code == 200
        refused = client.get(PATH, headers=_bearer(gateway_key))
        assert refused.status_code == 401
        assert "paired machine" in refused.json()["detail"]
        # Bad windows are refused in words, not answered with a day and more.
        assert client.get(PATH, params={"window": 10**9}, headers=_bearer(key)).status_code == 422


def test_the_control_api_proxy_needs_the_daemons_token(three: Three) -> None:
    peer = peers_of(three.b)[0]["id"]
    with three.b.control() as control:
        asked = control.get(f"/api/v1/peers/{peer}/metrics/llama-cpp-1")
        # Asked of a, which runs no such instance: its words come back.
        assert asked.status_code == 404, asked.text
        assert "runs no instance" in asked.json()["detail"]
        unknown = control.get("/api/v1/peers/nobody/metrics/llama-cpp-1")
        assert unknown.status_code == 404
        bare = httpx.get(
            f"{control.base_url}/api/v1/peers/{peer}/metrics/llama-cpp-1", trust_env=False
        )
        assert bare.status_code == 401
