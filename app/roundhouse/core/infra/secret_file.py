"""Secrets in one JSON file only its user can read: the store where no keyring exists.

A headless server has no Secret Service, so the daemon keeps keys here instead (ADR 35),
protected as the daemon token and the engine-key seed are: mode 0600 in the home's private
config folder, so another user cannot read it. Each change is written to a fresh file
beside it (created 0600) and renamed into place, so a crash leaves the old file or the new
one, never half of one.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
import threading
from pathlib import Path

from roundhouse.base.files import write_atomic
from roundhouse.core.errors import RoundhouseError

log = logging.getLogger(__name__)

FILE_NAME = "secrets.json"


class SecretFileError(RoundhouseError):
    """The secrets file cannot be used: the message says what to do."""

    title = "Secrets file unusable"
    status = 503


class SecretFile:
    """Get, set and delete secrets by name in `path` (created on the first set)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # The daemon calls from worker threads: one read-modify-write at a time.
        self._lock = threading.Lock()

    def get(self, name: str) -> str | None:
        with self._lock:
            return self._read().get(name)

    def set(self, name: str, value: str) -> None:
        with self._lock:
            stored = self._read()
            stored[name] = value
            self._write(stored)

    def delete(self, name: str) -> bool:
        with self._lock:
            stored = self._read()
            if stored.pop(name, None) is None:
                return False
            self._write(stored)
            return True

    def _read(self) -> dict[str, str]:
        try:
            mode = self.path.lstat().st_mode
        except FileNotFoundError:
            return {}
        if sys.platform != "win32":
            if (
                stat.S_ISLNK(mode)
                or not stat.S_ISREG(mode)
                or self.path.stat().st_uid != os.getuid()
            ):
                # Not a file this module wrote: read nothing from it and write nothing over it.
                raise SecretFileError(
                    f"{self.path} is not a plain file of this user's, so Roundhouse does not "
                    "trust it with keys: move it away and set the keys again."
                )
            if stat.S_IMODE(mode) & 0o077:
                log.warning("%s was readable by others: its mode is now 0600", self.path)
                self.path.chmod(0o600)
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise SecretFileError(
                f"{self.path} cannot be read as Roundhouse's secrets file: move it away and set "
                "the keys again."
            ) from exc
        if not isinstance(loaded, dict):
            raise SecretFileError(
                f"{self.path} is not Roundhouse's secrets file: move it away and set the keys "
                "again."
            )
        return {str(k): str(v) for k, v in loaded.items() if isinstance(v, str)}

    def _write(self, stored: dict[str, str]) -> None:
        # write_atomic's temporary file is made by mkstemp, mode 0600: never readable by
        # others, not even before the rename.
        data = json.dumps(stored, indent=1, sort_keys=True).encode("utf-8")
        try:
            write_atomic(self.path, data)
        except OSError as exc:
            raise SecretFileError(
                f"Roundhouse could not write {self.path}: check that its folder exists, is "
                "yours and has room, then try again."
            ) from exc
