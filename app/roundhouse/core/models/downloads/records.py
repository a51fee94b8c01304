"""The queue's rows: one dataclass per file, and the SQLite table that keeps them (blocking)."""

from __future__ import annotations

import dataclasses
import sqlite3
from dataclasses import dataclass
from typing import Any

from roundhouse.api.downloads import DownloadState
from roundhouse.core.infra.sqlite import transaction


@dataclass
class Entry:
    """One file of the queue as persisted; the service changes it, then saves it."""

    id: str
    seq: int  # queue order
    cache_dir: str  # the hub cache it was added to (a later change of setting moves nothing)
    repo: str
    revision: str
    commit: str
    path: str
    size: int
    etag: str
    sha256: str | None
    git_oid: str | None
    state: DownloadState
    bytes_done: int  # durable bytes of the partial (fsynced, then recorded); size when done
    validator: str | None  # the server's ETag for the partial's bytes (If-Range)
    error: str | None
    local_path: str | None
    quarantine_path: str | None
    created_at: float
    updated_at: float

    @property
    def blob_key(self) -> tuple[str, str, str]:
        """Entries with one key write one partial file: never two at once."""
        return (self.cache_dir, self.repo, self.etag)

    @property
    def file_key(self) -> tuple[str, str, str, str]:
        return (self.cache_dir, self.repo, self.commit, self.path)


_FIELDS = tuple(f.name for f in dataclasses.fields(Entry))

_V1 = (
    """CREATE TABLE downloads (
        id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        cache_dir TEXT NOT NULL,
        repo TEXT NOT NULL,
        revision TEXT NOT NULL,
        "commit" TEXT NOT NULL,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        etag TEXT NOT NULL,
        sha256 TEXT,
        git_oid TEXT,
        state TEXT NOT NULL,
        bytes_done INTEGER NOT NULL DEFAULT 0,
        validator TEXT,
        error TEXT,
        local_path TEXT,
        quarantine_path TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    )""",
    "CREATE INDEX downloads_by_seq ON downloads (seq)",
)


def _v1_initial(db: sqlite3.Connection) -> None:
    for statement in _V1:
        db.execute(statement)


# MIGRATIONS[n] takes a file from version n to n + 1; append, never edit a released one.
MIGRATIONS = (_v1_initial,)


class DownloadTable:
    """Reads and writes of the queue's rows on one connection (not thread-safe by itself)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def close(self) -> None:
        self._db.close()

    def load(self) -> list[Entry]:
        columns = ", ".join(f'"{name}"' for name in _FIELDS)
        rows = self._db.execute(f"SELECT {columns} FROM downloads ORDER BY seq").fetchall()
        return [self._entry(row) for row in rows]

    def next_seq(self) -> int:
        row = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM downloads").fetchone()
        return int(row[0]) + 1

    def save(self, entries: list[Entry]) -> None:
        """Insert or replace the entries, all in one transaction."""
        columns = ", ".join(f'"{name}"' for name in _FIELDS)
        marks = ", ".join("?" for _ in _FIELDS)
        with transaction(self._db):
            self._db.executemany(
                f"INSERT OR REPLACE INTO downloads ({columns}) VALUES ({marks})",
                [self._row(entry) for entry in entries],
            )

    def delete(self, ids: list[str]) -> None:
        with transaction(self._db):
            self._db.executemany("DELETE FROM downloads WHERE id = ?", [(i,) for i in ids])

    @staticmethod
    def _row(entry: Entry) -> tuple[Any, ...]:
        values = dataclasses.astuple(entry)
        return tuple(v.value if isinstance(v, DownloadState) else v for v in values)

    @staticmethod
    def _entry(row: tuple[Any, ...]) -> Entry:
        values = dict(zip(_FIELDS, row, strict=True))
        values["state"] = DownloadState(values["state"])
        return Entry(**values)
