"""A table in its own SQLite file (WAL) used from async code (the download queue, the
Ollama pull list). Every call runs in a worker thread, under one lock, on one connection
opened on first use and again after a failure; failures come back in words."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from roundhouse.core.infra.sqlite import NewerSchemaError

log = logging.getLogger(__name__)

T = TypeVar("T")


class Closable(Protocol):
    def close(self) -> None: ...


TableT = TypeVar("TableT", bound=Closable)


@dataclass(frozen=True)
class TableWords:
    """How errors name the file: 'the download queue', 'an empty queue', and what is safe;
    `unavailable` builds the feature's own error from those words."""

    name: str
    empty: str
    unaffected: str
    unavailable: Callable[[str], Exception]


class ThreadedTable(Generic[TableT]):
    """One table object over one connection, used from the event loop through `run`."""

    def __init__(self, path: Path, open_table: Callable[[Path], TableT], words: TableWords) -> None:
        self.path = path
        self._open_table = open_table
        self._words = words
        self._lock = threading.Lock()
        self._table: TableT | None = None

    async def run(self, operation: Callable[[TableT], T]) -> T:
        # Shielded: a cancelled caller (pause, shutdown) must not leave a write half-seen.
        return await asyncio.shield(asyncio.to_thread(self._locked, operation))

    async def close(self) -> None:
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        with self._lock:
            self._forget()

    def _locked(self, operation: Callable[[TableT], T]) -> T:
        words = self._words
        with self._lock:
            try:
                if self._table is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._table = self._open_table(self.path)
                return operation(self._table)
            except NewerSchemaError as exc:
                raise words.unavailable(
                    f"The {words.name} at {self.path} was written by a newer Roundhouse "
                    f"({exc}). Update Roundhouse, or move the file away to start {words.empty}."
                ) from exc
            except sqlite3.DatabaseError as exc:
                self._forget()
                log.error("The %s %s failed: %s", words.name, self.path, exc)
                raise words.unavailable(
                    f"The {words.name} at {self.path} cannot be used ({exc}). Check that the "
                    "disk has space and the folder is writable; if the file is damaged, move it "
                    f"away (with its -wal and -shm files) and Roundhouse starts {words.empty}. "
                    f"{words.unaffected}"
                ) from exc

    def _forget(self) -> None:
        if self._table is not None:
            try:
                self._table.close()
            except sqlite3.Error:
                log.warning("Closing the %s %s failed", self._words.name, self.path)
            self._table = None
