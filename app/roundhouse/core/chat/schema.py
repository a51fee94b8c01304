"""The chat database's tables, and the migrations that bring an older file up to date."""

from __future__ import annotations

import sqlite3

from roundhouse.core.infra.sqlite import Migration

_V1 = (
    """CREATE TABLE conversations (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        -- 1 while the title comes from the first user message, 0 once the user set one
        title_auto INTEGER NOT NULL DEFAULT 1,
        model TEXT,
        system_prompt TEXT NOT NULL DEFAULT '',
        params TEXT NOT NULL DEFAULT '{}',
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    )""",
    "CREATE INDEX conversations_by_update ON conversations (updated_at)",
    """CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        reasoning TEXT,
        stats TEXT,
        created_at REAL NOT NULL
    )""",
    "CREATE INDEX messages_by_conversation ON messages (conversation_id, id)",
)


def _v1_initial(db: sqlite3.Connection) -> None:
    for statement in _V1:
        db.execute(statement)


def _v2_images(db: sqlite3.Connection) -> None:
    # A JSON list of data: URLs, NULL for a message without images (nearly all of them).
    db.execute("ALTER TABLE messages ADD COLUMN images TEXT")


# MIGRATIONS[n] takes a file from version n to n + 1; append, never edit a released one.
MIGRATIONS: tuple[Migration, ...] = (_v1_initial, _v2_images)
