"""The paired peers, kept in peers.json in the config folder (written atomically): who each is,
where it listens, its pinned certificate, and the hash of the key it calls this daemon with.

The key this daemon calls a peer with is a secret: it goes to the keyring (infra/secrets) under
`peer:<id>`, never to this file.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from roundhouse.base.files import write_atomic
from roundhouse.core.errors import NotFoundError, SettingsError
from roundhouse.core.infra import secrets

FILE_NAME = "peers.json"
_SCHEMA = 1


@dataclass(frozen=True)
class Peer:
    """One paired daemon."""

    id: str
    name: str
    host: str
    port: int
    cert_pem: str
    fingerprint: str
    paired_at: float
    # sha256 (hex) of the key this peer calls us with; the key itself is never kept here.
    inbound_key_sha256: str


def peer_id(fingerprint: str) -> str:
    """A peer's id: the head of its certificate's fingerprint (stable while it keeps its
    identity, short enough to type)."""
    return fingerprint[:12]


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def secret_name(peer: str) -> str:
    """The keyring name of the key this daemon calls peer `peer` with."""
    return f"peer:{peer}"


class PeerStore:
    """The peers in one file; every call reads what is in memory, writes go to disk first."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / FILE_NAME
        self._lock = threading.Lock()
        self._peers: dict[str, Peer] = self._load()

    def _load(self) -> dict[str, Peer]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text("utf-8"))
            return {item["id"]: _peer(item) for item in data.get("peers", [])}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SettingsError(
                f"The paired machines file {self.path} cannot be read ({exc}). Fix it, or move "
                "it away and pair the machines again."
            ) from exc

    def _save(self, peers: dict[str, Peer]) -> None:
        data = {"schema": _SCHEMA, "peers": [asdict(p) for p in peers.values()]}
        write_atomic(self.path, json.dumps(data, indent=2).encode("utf-8"))
        self._peers = peers

    def list(self) -> list[Peer]:
        return sorted(self._peers.values(), key=lambda p: (p.name, p.id))

    def get(self, peer: str) -> Peer | None:
        return self._peers.get(peer)

    def require(self, peer: str) -> Peer:
        found = self._peers.get(peer)
        if found is None:
            raise NotFoundError(
                f"No paired machine has the id {peer!r}: `roundhouse peers list` shows them."
            )
        return found

    def add(self, peer: Peer, outbound_key: str) -> None:
        """Keep `peer` (replacing one with its id) and the key we call it with. Blocking: the
        keyring may ask the desktop; from async code call it in a thread."""
        secrets.set_secret(secret_name(peer.id), outbound_key)
        with self._lock:
            self._save({**self._peers, peer.id: peer})

    def moved(self, peer: str, host: str, port: int) -> Peer:
        """Record a peer's new address."""
        with self._lock:
            found = self.require(peer)
            updated = replace(found, host=host, port=port)
            self._save({**self._peers, peer: updated})
            return updated

    def remove(self, peer: str) -> Peer | None:
        """Forget `peer` and its key; None when it was not paired. Blocking (the keyring)."""
        with self._lock:
            found = self._peers.get(peer)
            if found is None:
                return None
            self._save({k: v for k, v in self._peers.items() if k != peer})
        secrets.delete_secret(secret_name(peer))
        return found

    def outbound_key(self, peer: str) -> str | None:
        """The key we call `peer` with, from the keyring. Blocking."""
        return secrets.get_secret(secret_name(peer))

    def check_inbound(self, key: str) -> Peer | None:
        """The peer whose key `key` is, or None; compares every hash in constant time."""
        if not key:
            return None
        offered = key_hash(key).encode("ascii")
        match: Peer | None = None
        for peer in self._peers.values():
            if hmac.compare_digest(offered, peer.inbound_key_sha256.encode("ascii")):
                match = peer
        return match


def _peer(item: dict[str, Any]) -> Peer:
    return Peer(
        id=str(item["id"]),
        name=str(item["name"]),
        host=str(item["host"]),
        port=int(item["port"]),
        cert_pem=str(item["cert_pem"]),
        fingerprint=str(item["fingerprint"]),
        paired_at=float(item["paired_at"]),
        inbound_key_sha256=str(item["inbound_key_sha256"]),
    )
