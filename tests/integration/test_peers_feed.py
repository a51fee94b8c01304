"""The change feed's peers kind with two real daemons paired on loopback: what the paired
machine told comes in one event (its hardware, instances, what it can start) and through
GET /api/v1/peers/machines, nothing asked again; a machine that goes away is said to be
unreachable, in words; a peer's own feed never carries the kind."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from roundhouse.api.events import EventKind
from roundhouse.server.routes.peer_api import PEER_KINDS
from tests.daemon_process import DaemonProcess
from tests.support.peers import pair, peer_daemon, peers_of


def _machines(daemon: DaemonProcess) -> dict[str, Any]:
    with daemon.control() as client:
        reply = client.get("/api/v1/peers/machines")
    assert reply.status_code == 200, reply.text
    view: dict[str, Any] = reply.json()
    return view


def _until(check: Callable[[], bool], within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _peers_events(daemon: DaemonProcess, count: int) -> list[dict[str, Any]]:
    """The first `count` events of the feed's peers kind (after its reset)."""
    found: list[dict[str, Any]] = []
    with (
        daemon.control() as client,
        client.stream("GET", "/api/v1/events", params={"kinds": "peers"}) as feed,
    ):
        for line in feed.iter_lines():
            if line.startswith("data:"):
                event = json.loads(line.removeprefix("data:"))
                if event["kind"] == "peers":
                    found.append(event)
                    if len(found) == count:
                        break
    return found


def test_the_peers_kind_follows_a_paired_machine(tmp_path: Path) -> None:
    with peer_daemon(tmp_path / "beta", "beta") as beta:
        with peer_daemon(tmp_path / "alpha", "alpha") as alpha:
            pair(beta, alpha)
            (alpha_id,) = [p["id"] for p in peers_of(beta)]

            def told() -> bool:
                seen = _machines(beta)["seen"]
                return bool(seen) and seen[0]["state"] is not None

            _until(told, 20, "alpha's state")
            view = _machines(beta)
            (peer,) = view["peers"]
            assert peer["name"] == "alpha" and peer["reachable"] is True and peer["error"] is None
            (seen,) = view["seen"]
            assert seen["id"] == alpha_id and seen["error"] is None
            assert seen["state"]["name"] == "alpha"
            assert seen["state"]["hardware"]["memory"]["total_bytes"] > 0

            # The feed carries the same view, whole.
            (event,) = _peers_events(beta, 1)
            assert event["data"] == _machines(beta)

            # A paired machine's follow of this one's feed never carries whom it is paired with.
            assert EventKind.PEERS not in PEER_KINDS

        # alpha is gone: beta says so, in words, and keeps it paired.
        def gone() -> bool:
            return _machines(beta)["peers"][0]["reachable"] is False

        _until(gone, 30, "alpha to be unreachable")
        view = _machines(beta)
        assert "alpha" in view["peers"][0]["error"]
        assert view["seen"][0]["state"] is None and view["seen"][0]["error"]
