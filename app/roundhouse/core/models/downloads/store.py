"""The queue's SQLite file as the service uses it: async, off the event loop, errors in words."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from roundhouse.core.chat.schema import NewerSchemaError
from roundhouse.core.models.downloads.errors import DownloadsUnavailableError
from roundhouse.core.models.downloads.records import DownloadTable, Entry, connect

log = logging.getLogger(__name__)

T = TypeVar("T")

QUEUE_FILE = "downloads.sqlite3"


class DownloadStore:
    """Rows of the queue in one SQLite file (WAL); every call in a worker thread, under one
    lock, on one connection, opened on first use and again after a failure."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._table: DownloadTable | None = None

    async def load(self) -> list[Entry]:
        return await self._run(lambda table: table.load())

    async def next_seq(self) -> int:
        return await self._run(lambda table: table.next_seq())

    async def save(self, *entries: Entry) -> None:
        # Copies: the caller goes on changing its entries while the thread writes.
        rows = [Entry(**vars(entry)) for entry in entries]
        await self._run(lambda table: table.save(rows))

    async def delete(self, ids: list[str]) -> None:
        if ids:
            await self._run(lambda table: table.delete(ids))

    async def close(self) -> None:
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        with self._lock:
            if self._table is not None:
                self._table.close()
                self._table = None

    async def _run(self, operation: Callable[[DownloadTable], T]) -> T:
        # Shielded: a cancelled caller (pause, shutdown) must not leave a write half-seen.
        return await asyncio.shield(asyncio.to_thread(self._locked, operation))

    def _locked(self, operation: Callable[[DownloadTable], T]) -> T:
        with self._lock:
            try:
                if self._table is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._table = DownloadTable(connect(self.path))
                return operation(self._table)
            except NewerSchemaError as exc:
                raise DownloadsUnavailableError(
                    f"The download queue at {self.path} was written by a newer Roundhouse "
                    f"({exc}). Update Roundhouse, or move the file away to start an empty queue."
                ) from exc
            except sqlite3.DatabaseError as exc:
                self._forget()
                log.error("Download queue %s failed: %s", self.path, exc)
                raise DownloadsUnavailableError(
                    f"The download queue at {self.path} cannot be used ({exc}). Check that the "
                    "disk has space and the folder is writable; if the file is damaged, move it "
                    "away (with its -wal and -shm files) and Roundhouse starts an empty queue. "
                    "Downloaded files are not affected."
                ) from exc

    def _forget(self) -> None:
        if self._table is not None:
            try:
                self._table.close()
            except sqlite3.Error:
                log.warning("Closing the failed download queue %s failed too", self.path)
            self._table = None
