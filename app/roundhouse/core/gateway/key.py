"""The gateway's API key: kept in the OS keyring (or, on a machine with none, in the file
only the user can read that core.infra.secrets keeps), cached by the daemon.

Other apps send it as `Authorization: Bearer <key>` (or `x-api-key`). It is read from the
keyring once when the daemon starts and cached, so the check on every request costs no
keyring call; it is changed only through `GatewayKeyStore`, which keeps both in step.

An empty marker file says that a key was set, so a daemon of a user who never set one does
not touch the keyring at all (a locked keyring may prompt at login), and a daemon that
cannot read a key it knows exists refuses every key rather than none.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import string
from pathlib import Path

from roundhouse.core.errors import InvalidInputError, RoundhouseError
from roundhouse.core.infra import secrets as keyring_secrets

log = logging.getLogger(__name__)

SECRET_NAME = "gateway:api-key"
KEY_PREFIX = "rh-"
MARKER_FILE = "gateway-key.set"
MIN_KEY_LENGTH = 16
# Visible ASCII only: the key travels in an HTTP header.
_KEY_CHARACTERS = frozenset(string.ascii_letters + string.digits + string.punctuation)
# A keyring that waits on a desktop prompt must not hold the daemon's start for ever.
READ_TIMEOUT_S = 15.0


def generate_key() -> str:
    """A fresh key: 256 random bits, URL-safe, with a prefix that says whose key it is."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def check_key(key: str) -> str:
    """The key with surrounding blanks removed, or InvalidInputError saying what is wrong."""
    key = key.strip()
    if len(key) < MIN_KEY_LENGTH:
        raise InvalidInputError(
            f"The key is too short ({len(key)} characters): use at least {MIN_KEY_LENGTH}, "
            "or let Roundhouse generate one (`roundhouse gateway key --generate`)."
        )
    if not set(key) <= _KEY_CHARACTERS:
        raise InvalidInputError(
            "The key may hold only letters, digits and ASCII punctuation (no spaces), since "
            "clients send it in an HTTP header."
        )
    return key


class GatewayKeyStore:
    """The key as the daemon knows it: `current` is what requests are checked against."""

    def __init__(self, marker: Path | None = None) -> None:
        # None: always ask the keyring. "": a key exists but could not be read, so no key
        # matches (the daemon's own token still does).
        self._key: str | None = None
        self._marker = marker
        # Why the keyring could not be read at start, if it could not; cleared by a change.
        self.error: str | None = None
        # Where a key set now is kept, in words (the keyring, or the secrets file's path).
        self.kept_in = keyring_secrets.KEYRING_WORDS
        self._lock = asyncio.Lock()

    @classmethod
    def with_marker_in(cls, folder: Path) -> GatewayKeyStore:
        return cls(folder / MARKER_FILE)

    @property
    def current(self) -> str | None:
        return self._key

    @property
    def is_set(self) -> bool:
        return self._key is not None

    async def load(self) -> None:
        """Read the key from the keyring (in a thread, bounded in time) if one was set."""
        async with self._lock:
            self._key, self.error = None, None
            await self._learn_where()
            if self._marker is not None and not self._marker.exists():
                return
            try:
                self._key = await asyncio.wait_for(
                    asyncio.to_thread(keyring_secrets.get_secret, SECRET_NAME), READ_TIMEOUT_S
                )
            except RoundhouseError as exc:
                self.error = exc.detail
            except TimeoutError:
                self.error = f"The keyring did not answer within {READ_TIMEOUT_S:.0f} s."
            if self.error is not None:
                if self._marker is not None:
                    self._key = ""  # fail closed: the key exists, nothing can match it
                self.error += " Unlock the keyring and restart the daemon, or set a new key."
                log.warning("The gateway key could not be read from the keyring: %s", self.error)
            elif self._key is None and self._marker is not None:
                self._marker.unlink(missing_ok=True)  # removed from the keyring meanwhile

    async def set(self, key: str | None = None) -> str:
        """Store `key` (checked), or a generated one, and return it."""
        new = generate_key() if key is None else check_key(key)
        async with self._lock:
            await asyncio.to_thread(keyring_secrets.set_secret, SECRET_NAME, new)
            await self._learn_where()
            self._key, self.error = new, None
            if self._marker is not None:
                self._marker.parent.mkdir(parents=True, exist_ok=True)
                self._marker.touch()
        log.info("The gateway key was %s.", "generated" if key is None else "set")
        return new

    async def clear(self) -> bool:
        """Remove the key from the keyring; False when there was none."""
        async with self._lock:
            removed = await asyncio.to_thread(keyring_secrets.delete_secret, SECRET_NAME)
            self._key, self.error = None, None
            if self._marker is not None:
                self._marker.unlink(missing_ok=True)
        log.info("The gateway key was cleared.")
        return removed

    async def _learn_where(self) -> None:
        # In a thread: finding the keyring may ask D-Bus. A store that cannot be used says
        # so when the key is read or set; the words keep their last value meanwhile.
        with contextlib.suppress(RoundhouseError):
            self.kept_in = await asyncio.to_thread(keyring_secrets.kept_in)
