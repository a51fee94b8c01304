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


def fts5_available(db: sqlite3.Connection) -> bool:
    """Whether this SQLite was built with FTS5 (Debian's and python.org's are)."""
    try:
        db.execute("CREATE VIRTUAL TABLE temp._fts5_probe USING fts5(x)")
    except sqlite3.OperationalError:
        return False
    db.execute("DROP TABLE temp._fts5_probe")
    return True


# The message text index: external content (the text lives once, in `messages`), kept in
# step by triggers; a deleted conversation's messages leave it through the cascade's deletes.
_FTS = (
    "CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
    """CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content);
    END""",
    """CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content)
        VALUES ('delete', old.id, old.content);
    END""",
    """CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content)
        VALUES ('delete', old.id, old.content);
        INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content);
    END""",
    "INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')",
)


def _v3_branches_search_presets(db: sqlite3.Connection) -> None:
    # Messages form a tree: an edit or a regenerate adds a sibling and keeps the old branch.
    # A file from before had one line of messages: each one's parent is the one before it.
    db.execute(
        "ALTER TABLE messages ADD COLUMN parent_id INTEGER "
        "REFERENCES messages (id) ON DELETE CASCADE"
    )
    db.execute(
        """UPDATE messages SET parent_id = (
            SELECT MAX(p.id) FROM messages p
            WHERE p.conversation_id = messages.conversation_id AND p.id < messages.id)"""
    )
    db.execute("CREATE INDEX messages_by_parent ON messages (parent_id)")
    # The end of the path the conversation shows (NULL: no messages).
    db.execute("ALTER TABLE conversations ADD COLUMN leaf_id INTEGER")
    db.execute(
        "UPDATE conversations SET leaf_id = "
        "(SELECT MAX(m.id) FROM messages m WHERE m.conversation_id = conversations.id)"
    )
    # The system-prompt preset the conversation's prompt came from (its text is kept here
    # too, in system_prompt: a preset changed or removed later leaves the chat as it was).
    db.execute("ALTER TABLE conversations ADD COLUMN preset TEXT")
    db.execute(
        """CREATE TABLE presets (
            name TEXT PRIMARY KEY COLLATE NOCASE,
            text TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )"""
    )
    if fts5_available(db):
        for statement in _FTS:
            db.execute(statement)


# MIGRATIONS[n] takes a file from version n to n + 1; append, never edit a released one.
MIGRATIONS: tuple[Migration, ...] = (_v1_initial, _v2_images, _v3_branches_search_presets)
