"""Search across the chat history: conversation titles, and message text through SQLite's
FTS5 index where this SQLite has it (LIKE otherwise), bounded, each hit with a snippet."""

from __future__ import annotations

import sqlite3
from typing import Any

from roundhouse.api.chat import MAX_SEARCH_HITS, Role, SearchHit, SearchResults

# Words of context either side of a match in a snippet.
SNIPPET_TOKENS = 12
# Characters either side of a match in a snippet made without FTS5.
SNIPPET_CHARS = 60


def has_index(db: sqlite3.Connection) -> bool:
    """Whether the file has the message text index (made when its SQLite had FTS5)."""
    row = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'messages_fts'"
    ).fetchone()
    return row is not None


def fts_query(text: str) -> str:
    """The user's words as an FTS5 query: each word quoted (so no word is read as an
    operator), all of them required, the last one a prefix (a search as one types)."""
    words = ['"' + word.replace('"', '""') + '"' for word in text.split()]
    return " ".join(words) + "*" if words else ""


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def snippet_around(content: str, text: str) -> str:
    """A line of `content` around the first place `text` is found (any case)."""
    flat = " ".join(content.split())
    at = flat.lower().find(text.lower())
    if at < 0:
        return flat[: SNIPPET_CHARS * 2] + ("…" if len(flat) > SNIPPET_CHARS * 2 else "")
    start = max(at - SNIPPET_CHARS, 0)
    end = min(at + len(text) + SNIPPET_CHARS, len(flat))
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


def search(db: sqlite3.Connection, text: str, limit: int = 50) -> SearchResults:
    """Titles first (newest conversation first), then messages; at most `limit` hits."""
    query = " ".join(text.split())
    limit = max(1, min(limit, MAX_SEARCH_HITS))
    if not query:
        return SearchResults(query=query, hits=[])
    hits = [
        SearchHit(conversation_id=row[0], title=row[1], updated_at=row[2], snippet=row[1])
        for row in db.execute(
            "SELECT id, title, updated_at FROM conversations WHERE title LIKE ? ESCAPE '\\' "
            "ORDER BY updated_at DESC, rowid DESC LIMIT ?",
            (_like(query), limit + 1),
        )
    ]
    left = limit + 1 - len(hits)
    if left > 0:
        hits += _message_hits(db, query, left)
    return SearchResults(query=query, hits=hits[:limit], truncated=len(hits) > limit)


def _message_hits(db: sqlite3.Connection, query: str, limit: int) -> list[SearchHit]:
    rows: list[Any]
    if has_index(db):
        try:
            rows = db.execute(
                "SELECT m.conversation_id, c.title, c.updated_at, m.id, m.role, "
                f"snippet(messages_fts, 0, '', '', '…', {SNIPPET_TOKENS}) "
                "FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
                "JOIN conversations c ON c.id = m.conversation_id "
                "WHERE messages_fts MATCH ? ORDER BY c.updated_at DESC, m.id LIMIT ?",
                (fts_query(query), limit),
            ).fetchall()
        except sqlite3.OperationalError:
            # Words the tokenizer reads as nothing (only punctuation): fall back to LIKE.
            rows = _like_rows(db, query, limit)
    else:
        rows = _like_rows(db, query, limit)
    return [
        SearchHit(
            conversation_id=row[0],
            title=row[1],
            updated_at=row[2],
            message_id=row[3],
            role=Role(row[4]),
            snippet=" ".join(row[5].split()),
        )
        for row in rows
    ]


def _like_rows(db: sqlite3.Connection, query: str, limit: int) -> list[Any]:
    rows = db.execute(
        "SELECT m.conversation_id, c.title, c.updated_at, m.id, m.role, m.content "
        "FROM messages m JOIN conversations c ON c.id = m.conversation_id "
        "WHERE m.content LIKE ? ESCAPE '\\' ORDER BY c.updated_at DESC, m.id LIMIT ?",
        (_like(query), limit),
    ).fetchall()
    return [(*row[:5], snippet_around(row[5], query)) for row in rows]
