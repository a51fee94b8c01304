"""The queue's SQLite file as the service uses it: async, off the event loop, errors in words."""

from __future__ import annotations

from pathlib import Path

from roundhouse.core.infra.sqlite import connect_wal
from roundhouse.core.infra.sqlite_table import TableWords, ThreadedTable
from roundhouse.core.models.downloads.errors import DownloadsUnavailableError
from roundhouse.core.models.downloads.records import MIGRATIONS, DownloadTable, Entry

QUEUE_FILE = "downloads.sqlite3"

_WORDS = TableWords(
    name="download queue",
    empty="an empty queue",
    unaffected="Downloaded files are not affected.",
    unavailable=DownloadsUnavailableError,
)


class DownloadStore:
    """Rows of the queue in one SQLite file (WAL); see ThreadedTable."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._table = ThreadedTable(
            path, lambda p: DownloadTable(connect_wal(p, MIGRATIONS)), _WORDS
        )

    async def load(self) -> list[Entry]:
        return await self._table.run(lambda table: table.load())

    async def next_seq(self) -> int:
        return await self._table.run(lambda table: table.next_seq())

    async def save(self, *entries: Entry) -> None:
        # Copies: the caller goes on changing its entries while the thread writes.
        rows = [Entry(**vars(entry)) for entry in entries]
        await self._table.run(lambda table: table.save(rows))

    async def delete(self, ids: list[str]) -> None:
        if ids:
            await self._table.run(lambda table: table.delete(ids))

    async def close(self) -> None:
        await self._table.close()
