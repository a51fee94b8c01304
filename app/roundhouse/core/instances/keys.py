"""Each engine instance's key: derived from a secret only this user can read, never stored.

An engine Roundhouse starts answers only requests that carry its instance's key (ADR 21).
The key is `HMAC-SHA256(seed, instance id)`: a daemon that adopts an engine an earlier one
left running derives the same key, and no key is written anywhere. The seed is 32 random
bytes in a file created with mode 0600, like the control token: the same threat (another
user, a web page) and the same protection, with no keyring needed to start an engine.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import secrets
import stat
import sys
import threading
from pathlib import Path

log = logging.getLogger(__name__)

SEED_FILE = "engine-keys.seed"
SEED_BYTES = 32
KEY_PREFIX = "rhe-"


class EngineKeys:
    """Per-instance keys from the seed in `state_dir` (created on first use)."""

    def __init__(self, state_dir: Path) -> None:
        self._path = state_dir / SEED_FILE
        self._seed: bytes | None = None
        self._lock = threading.Lock()

    def key_for(self, instance_id: str) -> str:
        digest = hmac.new(self._read_seed(), instance_id.encode(), hashlib.sha256).digest()
        return KEY_PREFIX + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

    def _read_seed(self) -> bytes:
        with self._lock:
            if self._seed is None:
                self._seed = _load_or_create(self._path)
            return self._seed


def _load_or_create(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # O_EXCL with mode 0600: never readable by others, not even for a moment.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_existing(path)
    seed = secrets.token_bytes(SEED_BYTES)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(seed.hex())
    return seed


def _read_existing(path: Path) -> bytes:
    if sys.platform != "win32":
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode) or not stat.S_ISREG(mode) or path.stat().st_uid != os.getuid():
            # Not the file this module writes: start over with a fresh seed. Engines an
            # earlier daemon left running then no longer accept us, and are reaped.
            log.warning("%s is not a plain file of this user's: a new one is made", path)
            path.unlink()
            return _load_or_create(path)
        if stat.S_IMODE(mode) & 0o077:
            log.warning("%s was readable by others: its mode is now 0600", path)
            path.chmod(0o600)
    try:
        seed = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (ValueError, UnicodeDecodeError):
        seed = b""
    if len(seed) != SEED_BYTES:
        log.warning("%s is damaged: a new one is made", path)
        path.unlink()
        return _load_or_create(path)
    return seed


def auth_headers(key: str | None) -> dict[str, str]:
    """The header that carries an engine's key; none when it has no key."""
    return {"authorization": f"Bearer {key}"} if key else {}
