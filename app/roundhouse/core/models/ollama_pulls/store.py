"""The pull jobs' SQLite file as the service uses it: async, off the event loop, errors in words."""

from __future__ import annotations

import copy
from pathlib import Path

from roundhouse.core.infra.sqlite import connect_wal
from roundhouse.core.infra.sqlite_table import TableWords, ThreadedTable
from roundhouse.core.models.downloads.errors import DownloadsUnavailableError
from roundhouse.core.models.ollama_pulls.records import MIGRATIONS, PullEntry, PullTable

_WORDS = TableWords(
    name="Ollama pull list",
    empty="an empty list",
    unaffected="Ollama's models are not affected.",
    unavailable=DownloadsUnavailableError,
)


class PullStore:
    """Rows of the pull jobs in one SQLite file (WAL); see ThreadedTable."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._table = ThreadedTable(path, lambda p: PullTable(connect_wal(p, MIGRATIONS)), _WORDS)

    async def load(self) -> list[PullEntry]:
        return await self._table.run(lambda table: table.load())

    async def save(self, *entries: PullEntry) -> None:
        # Copies: the caller goes on changing its entries while the thread writes.
        rows = [copy.deepcopy(entry) for entry in entries]
        await self._table.run(lambda table: table.save(rows))

    async def delete(self, ids: list[str]) -> None:
        if ids:
            await self._table.run(lambda table: table.delete(ids))

    async def close(self) -> None:
        await self._table.close()
