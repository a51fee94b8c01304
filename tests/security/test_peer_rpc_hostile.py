"""Hostile requests to the route that lends an rpc-server (ADR 40), real daemons on loopback: no
key or a wrong one is refused and starts nothing; the paired machine's lease is its own, reached
only through the mutual-TLS relay, and it ends when that machine unpairs."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from roundhouse.core.peers.tls import CERT_FILE, pinned_context
from roundhouse.server.rpc_lending import MAX_LEASES_PER_PEER
from tests.daemon_process import DaemonProcess, path_with
from tests.processes import alive
from tests.support.peers import pair, peer_daemon, peer_key, peer_port, peers_of

PATH = "/peer/v1/rpc-servers"


def lent(daemon: DaemonProcess) -> list[dict[str, Any]]:
    with daemon.control() as api:
        workers: list[dict[str, Any]] = api.get("/api/v1/rpc-servers").json()["rpc_servers"]
    return workers


def listener(daemon: DaemonProcess) -> httpx.Client:
    cert = (daemon.home.data_dir / CERT_FILE).read_text()
    return httpx.Client(
        base_url=f"https://127.0.0.1:{peer_port(daemon)}",
        verify=pinned_context(cert),
        trust_env=False,
        timeout=60,
    )


def test_the_lending_route_refuses_strangers_and_ends_with_the_pairing(
    llama_server_binary: Path, tmp_path: Path
) -> None:
    env = path_with(llama_server_binary)
    with (
        peer_daemon(tmp_path / "alpha", "alpha", env=env) as alpha,
        peer_daemon(tmp_path / "beta", "beta", env=env) as beta,
    ):
        pair(beta, alpha)
        (alpha_seen_by_beta,) = peers_of(beta)
        key = peer_key(beta, alpha_seen_by_beta["id"])
        with listener(alpha) as client:
            for headers in ({}, {"authorization": "Bearer not-a-key"}):
                refused = client.post(PATH, headers=headers)
                assert refused.status_code == 401, refused.text
                assert client.get(PATH, headers=headers).status_code == 401
            assert lent(alpha) == []

            bearer = {"authorization": f"Bearer {key}"}
            made = client.post(PATH, headers=bearer)
            assert made.status_code == 201, made.text
            lease = made.json()
            (worker,) = lent(alpha)
            assert worker["host"] == "127.0.0.1" and alive(worker["pid"])
            assert client.get(PATH, headers=bearer).json()["leases"] == [lease]
            # Another id is nobody's to end; nothing changes.
            assert client.delete(f"{PATH}/nothere", headers=bearer).status_code == 404
            assert [w["id"] for w in lent(alpha)] == [worker["id"]]
            # One machine borrows a bounded number at once.
            more = [client.post(PATH, headers=bearer) for _ in range(MAX_LEASES_PER_PEER - 1)]
            assert all(m.status_code == 201 for m in more), [m.text for m in more]
            too_many = client.post(PATH, headers=bearer)
            assert too_many.status_code == 409
            assert "already lends 8 rpc-servers to beta" in too_many.json()["detail"]
            for extra in more:
                ended = client.delete(f"{PATH}/{extra.json()['id']}", headers=bearer)
                assert ended.status_code == 200, ended.text
            assert [w["id"] for w in lent(alpha)] == [worker["id"]]

            # The relay: a plain client gets nothing from rpc-server behind it.
            with socket.create_connection(("127.0.0.1", lease["port"]), timeout=5) as plain:
                plain.sendall(b"\x00" * 64)
                plain.settimeout(5)
                try:
                    got = plain.recv(1024)
                except OSError:
                    got = b""
            assert not got or got[0] == 0x15, got  # nothing, or a TLS alert

        # Unpaired from beta's side: alpha forgets beta and ends what it lent.
        with beta.control() as api:
            assert api.delete(f"/api/v1/peers/{alpha_seen_by_beta['id']}").status_code == 200
        deadline = time.monotonic() + 15
        while lent(alpha) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert lent(alpha) == []
        assert not alive(worker["pid"])
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", lease["port"]), timeout=2).close()
