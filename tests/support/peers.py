"""Daemons that can pair: each in its own home with its own file keyring, its peer listener on
loopback at a free port; and the pairing done as a user does it (a code on one, add on the
other)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from roundhouse.api.settings import GatewaySettings, PeersSettings, Settings
from roundhouse.base.paths import resolve_home
from roundhouse.core.infra.settings import save_settings
from tests.daemon_process import DaemonProcess, running_daemon
from tests.processes import free_port
from tests.support.standins import keyring_env


@contextmanager
def peer_daemon(
    root: Path,
    name: str,
    *,
    listen: bool = True,
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
    **settings: Any,
) -> Iterator[DaemonProcess]:
    """A daemon named `name` under `root` whose peer listener is on 127.0.0.1 (unless not
    `listen`), with `settings` (Settings fields) besides; `argv` runs another serve command
    (a recorded machine's, tests/support/recorded_daemon.py)."""
    home = resolve_home(root)
    home.ensure()
    peers = PeersSettings(listen_host="127.0.0.1" if listen else "", port=free_port(), name=name)
    save_settings(
        home.settings_file,
        Settings(peers=peers, gateway=GatewaySettings(idle_ttl_s=0), **settings),
    )
    with running_daemon(root, env={**keyring_env(root), **(env or {})}, argv=argv) as daemon:
        yield daemon


def peer_port(daemon: DaemonProcess) -> int:
    with daemon.control() as client:
        port: int = client.get("/api/v1/settings").json()["peers"]["port"]
    return port


def open_code(daemon: DaemonProcess) -> dict[str, Any]:
    with daemon.control() as client:
        reply = client.post("/api/v1/peers/code")
    assert reply.status_code == 200, reply.text
    answer: dict[str, Any] = reply.json()
    return answer


def pair_with(daemon: DaemonProcess, port: int, code: str) -> httpx.Response:
    """Ask `daemon` to pair with the daemon whose peer listener is on 127.0.0.1:`port`."""
    with daemon.control() as client:
        return client.post(
            "/api/v1/peers", json={"host": "127.0.0.1", "port": port, "code": code}, timeout=60
        )


def pair(initiator: DaemonProcess, responder: DaemonProcess) -> dict[str, Any]:
    """Pair the two the real way: a code on `responder`, typed into `initiator`. The
    initiator's view of the responder."""
    offer = open_code(responder)
    reply = pair_with(initiator, offer["port"], offer["code"])
    assert reply.status_code == 201, reply.text
    answer: dict[str, Any] = reply.json()
    return answer


def peers_of(daemon: DaemonProcess, check: bool = False) -> list[dict[str, Any]]:
    with daemon.control() as client:
        reply = client.get("/api/v1/peers", params={"check": str(check).lower()}, timeout=60)
    assert reply.status_code == 200, reply.text
    found: list[dict[str, Any]] = reply.json()["peers"]
    return found


def peer_key(daemon: DaemonProcess, peer_id: str) -> str:
    """The key `daemon` calls `peer_id` with, from its test keyring."""
    import json

    assert daemon.home.root is not None
    stored = json.loads((daemon.home.root / "keyring.json").read_text())
    key: str = stored[f"roundhouse\0peer:{peer_id}"]
    return key
