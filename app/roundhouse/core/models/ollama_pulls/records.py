"""Ollama pull jobs as persisted: one dataclass per job, and its SQLite table (blocking)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from roundhouse.api.downloads import DownloadState
from roundhouse.core.infra.sqlite import transaction

PULLS_FILE = "ollama-pulls.sqlite3"


@dataclass
class PullEntry:
    """One pull as persisted; the service changes it, then saves it."""

    id: str
    seq: int  # queue order
    model: str
    base_url: str
    instance: str | None
    state: DownloadState
    status: str  # Ollama's last status line
    error: str | None
    note: str | None
    created_at: float
    updated_at: float
    # digest -> [completed, total], as Ollama last reported each layer.
    layers: dict[str, list[int]] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return sum(total for _, total in self.layers.values())

    @property
    def bytes_done(self) -> int:
        return sum(min(done, total) for done, total in self.layers.values())


_FIELDS = tuple(f.name for f in dataclasses.fields(PullEntry))

_V1 = (
    """CREATE TABLE pulls (
        id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        model TEXT NOT NULL,
        base_url TEXT NOT NULL,
        instance TEXT,
        state TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT '',
        error TEXT,
        note TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        layers TEXT NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX pulls_by_seq ON pulls (seq)",
)


def _v1_initial(db: sqlite3.Connection) -> None:
    for statement in _V1:
        db.execute(statement)


# MIGRATIONS[n] takes a file from version n to n + 1; append, never edit a released one.
MIGRATIONS = (_v1_initial,)


class PullTable:
    """Reads and writes of the jobs' rows on one connection (not thread-safe by itself)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def close(self) -> None:
        self._db.close()

    def load(self) -> list[PullEntry]:
        columns = ", ".join(f'"{name}"' for name in _FIELDS)
        rows = self._db.execute(f"SELECT {columns} FROM pulls ORDER BY seq").fetchall()
        return [self._entry(row) for row in rows]

    def save(self, entries: list[PullEntry]) -> None:
        columns = ", ".join(f'"{name}"' for name in _FIELDS)
        marks = ", ".join("?" for _ in _FIELDS)
        with transaction(self._db):
            self._db.executemany(
                f"INSERT OR REPLACE INTO pulls ({columns}) VALUES ({marks})",
                [self._row(entry) for entry in entries],
            )

    def delete(self, ids: list[str]) -> None:
        with transaction(self._db):
            self._db.executemany("DELETE FROM pulls WHERE id = ?", [(i,) for i in ids])

    @staticmethod
    def _row(entry: PullEntry) -> tuple[Any, ...]:
        values = {name: getattr(entry, name) for name in _FIELDS}
        values["state"] = entry.state.value
        values["layers"] = json.dumps(entry.layers)
        return tuple(values.values())

    @staticmethod
    def _entry(row: tuple[Any, ...]) -> PullEntry:
        values = dict(zip(_FIELDS, row, strict=True))
        values["state"] = DownloadState(values["state"])
        layers = json.loads(values["layers"] or "{}")
        values["layers"] = {
            str(digest): [int(pair[0]), int(pair[1])]
            for digest, pair in (layers.items() if isinstance(layers, dict) else [])
        }
        return PullEntry(**values)
