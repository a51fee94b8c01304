"""A lock file that refuses at once, rather than wait, when another install holds it."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

import filelock

from roundhouse.core.engines.install.errors import InstallBusyError


class BusyLock:
    """`with BusyLock(path, "llama.cpp"):` raises InstallBusyError when held elsewhere.

    A file lock, so a second daemon or a CLI on the same home is refused as well.
    """

    def __init__(self, path: Path, what: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = filelock.FileLock(str(path))
        self.what = what

    def __enter__(self) -> BusyLock:
        try:
            self._lock.acquire(timeout=0)
        except filelock.Timeout as exc:
            raise InstallBusyError(
                f"Another install or removal of {self.what} is running; wait for it to finish."
            ) from exc
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._lock.release()
