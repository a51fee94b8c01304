"""The queue's SQLite file: rows round-trip, WAL, and a newer or damaged file is refused in
words (the daemon keeps running)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from roundhouse.api.downloads import DownloadState
from roundhouse.core.models.downloads.errors import DownloadsUnavailableError
from roundhouse.core.models.downloads.records import Entry
from roundhouse.core.models.downloads.store import DownloadStore


def _entry(item_id: str, seq: int) -> Entry:
    return Entry(
        id=item_id,
        seq=seq,
        cache_dir="/cache/дом",
        repo="org/model",
        revision="main",
        commit="1" * 40,
        path="q/model.gguf",
        size=100,
        etag="e" * 64,
        sha256="e" * 64,
        git_oid=None,
        state=DownloadState.PAUSED,
        bytes_done=40,
        validator='"etag"',
        error=None,
        local_path=None,
        quarantine_path=None,
        created_at=1.0,
        updated_at=2.0,
    )


def test_rows_round_trip_in_wal_mode(tmp_path: Path) -> None:
    store = DownloadStore(tmp_path / "q.sqlite3")

    async def body() -> list[Entry]:
        await store.save(_entry("b", 2), _entry("a", 1))
        changed = _entry("a", 1)
        changed.state, changed.bytes_done = DownloadState.DONE, 100
        await store.save(changed)
        await store.delete(["b"])
        rows = await store.load()
        await store.close()
        return rows

    (row,) = asyncio.run(body())
    assert row == Entry(**{**vars(_entry("a", 1)), "state": DownloadState.DONE, "bytes_done": 100})
    with sqlite3.connect(tmp_path / "q.sqlite3") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT version FROM schema_version").fetchone()[0] == 1


def test_a_newer_file_is_refused_in_words(tmp_path: Path) -> None:
    path = tmp_path / "q.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        db.execute("INSERT INTO schema_version VALUES (99)")
    with pytest.raises(DownloadsUnavailableError, match="newer Roundhouse"):
        asyncio.run(DownloadStore(path).load())


def test_a_damaged_file_is_refused_in_words(tmp_path: Path) -> None:
    path = tmp_path / "q.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(DownloadsUnavailableError, match="move it away"):
        asyncio.run(DownloadStore(path).load())
