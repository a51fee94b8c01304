"""SQLite files the features keep (chats, the download queue, Ollama pulls): WAL, explicit
transactions, and numbered migrations that bring an older file up to date."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

# A file's migrations[n] takes it from version n to n + 1; append, never edit a released one.
Migration = Callable[[sqlite3.Connection], None]


class NewerSchemaError(Exception):
    """The file was written by a newer Roundhouse than this one."""

    def __init__(self, found: int, known: int) -> None:
        super().__init__(f"schema version {found}, this Roundhouse knows up to {known}")
        self.found = found
        self.known = known


def schema_version(db: sqlite3.Connection) -> int:
    db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = db.execute("SELECT version FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def migrate(db: sqlite3.Connection, migrations: Sequence[Migration]) -> int:
    """Bring the file to the newest version, each step in its own transaction (SQLite's DDL
    is transactional); the version reached. A failed step leaves the version before it."""
    known = len(migrations)
    found = schema_version(db)
    if found > known:
        raise NewerSchemaError(found, known)
    for version in range(found, known):
        with transaction(db):
            migrations[version](db)
            db.execute("DELETE FROM schema_version")
            db.execute("INSERT INTO schema_version (version) VALUES (?)", (version + 1,))
    return known


def connect_wal(
    path: Path, migrations: Sequence[Migration], *, foreign_keys: bool = False
) -> sqlite3.Connection:
    """Open (or create) the file in WAL mode, migrated to the newest schema. Raises
    sqlite3.DatabaseError for a file that is not a database."""
    # Autocommit: transactions are explicit (`transaction`). One connection is shared by
    # the worker threads its store runs it in, under that store's lock.
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5.0)
    try:
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise sqlite3.OperationalError(f"the file cannot use WAL mode (it is in {mode})")
        # Safe with WAL: a power cut may lose the last commit, never corrupt the file.
        db.execute("PRAGMA synchronous=NORMAL")
        if foreign_keys:
            db.execute("PRAGMA foreign_keys=ON")
        migrate(db, migrations)
    except BaseException:
        db.close()
        raise
    return db


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction on a connection in autocommit mode (isolation_level=None):
    taken at once (IMMEDIATE), so two writers queue instead of failing half-way."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
