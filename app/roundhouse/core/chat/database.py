"""Blocking reads and writes of one open chat file; the store serialises and off-loads them."""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from roundhouse.api.chat import (
    MAX_MESSAGE_CHARS,
    Conversation,
    ConversationSummary,
    ConversationUpdate,
    Message,
    MessageEdit,
    NewConversation,
    NewMessage,
    ReplyStats,
    Role,
    SamplingParams,
)
from roundhouse.core.chat.schema import MIGRATIONS
from roundhouse.core.chat.titles import DEFAULT_TITLE, title_from
from roundhouse.core.errors import InvalidInputError, NotFoundError
from roundhouse.core.infra.sqlite import connect_wal, transaction

Clock = Callable[[], float]

_SUMMARY = """
    SELECT c.id, c.title, c.model, c.created_at, c.updated_at,
           (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id)
    FROM conversations c
"""
_NEWEST_FIRST = " ORDER BY c.updated_at DESC, c.rowid DESC"
_MESSAGE = "SELECT id, role, content, reasoning, stats, created_at, images FROM messages"


def new_conversation_id() -> str:
    """Short, random, safe in a URL and a shell: 10 lowercase hex digits."""
    return secrets.token_hex(5)


def connect(path: Path) -> sqlite3.Connection:
    """Open (or create) the file in WAL mode with foreign keys on, migrated to the newest
    schema. Raises sqlite3.DatabaseError for a file that is not a database."""
    return connect_wal(path, MIGRATIONS, foreign_keys=True)


def _check_length(text: str | None) -> None:
    if text is not None and len(text) > MAX_MESSAGE_CHARS:
        raise InvalidInputError(
            f"A message may hold at most {MAX_MESSAGE_CHARS:,} characters; this one has "
            f"{len(text):,}. Shorten it, or attach less text."
        )


def _stats_json(stats: ReplyStats | None) -> str | None:
    return stats.model_dump_json(exclude_defaults=True) if stats is not None else None


class ChatDatabase:
    """The chat history's operations on an open connection (not thread-safe by itself)."""

    def __init__(self, db: sqlite3.Connection, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def close(self) -> None:
        self._db.close()

    # -- reads ------------------------------------------------------------------------------

    def summaries(self, limit: int | None = None) -> list[ConversationSummary]:
        sql = _SUMMARY + _NEWEST_FIRST + " LIMIT ?"
        rows = self._db.execute(sql, (limit if limit is not None else -1,)).fetchall()
        return [self._summary(row) for row in rows]

    def conversation(self, conversation_id: str) -> Conversation:
        row = self._db.execute(
            "SELECT system_prompt, params FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if row is None:
            raise _no_conversation(conversation_id)
        summary = self._db.execute(_SUMMARY + " WHERE c.id = ?", (conversation_id,)).fetchone()
        messages = self._db.execute(
            _MESSAGE + " WHERE conversation_id = ? ORDER BY id", (conversation_id,)
        ).fetchall()
        return Conversation(
            **self._summary(summary).model_dump(),
            system_prompt=row[0],
            params=SamplingParams.model_validate_json(row[1]),
            messages=[self._message(m) for m in messages],
        )

    # -- conversations ----------------------------------------------------------------------

    def create(self, new: NewConversation, max_conversations: int) -> Conversation:
        """Add a conversation (with the messages it carries); the least recently updated
        beyond `max_conversations` are deleted."""
        _check_length(new.system_prompt)
        for message in new.messages:
            _check_length(message.content)
            _check_length(message.reasoning)
        now = self._clock()
        first_user = next((m.content for m in new.messages if m.role == Role.USER), None)
        title = new.title.strip() if new.title and new.title.strip() else None
        with transaction(self._db):
            conversation_id = self._insert_conversation(
                title or title_from(first_user), title is None, new, now
            )
            for message in new.messages:
                self._insert_message(conversation_id, message, now)
            self._db.execute(
                "DELETE FROM conversations WHERE id IN (SELECT c.id FROM conversations c"
                + _NEWEST_FIRST
                + " LIMIT -1 OFFSET ?)",
                (max_conversations,),
            )
        return self.conversation(conversation_id)

    def _insert_conversation(
        self, title: str, title_auto: bool, new: NewConversation, now: float
    ) -> str:
        for _ in range(5):
            conversation_id = new_conversation_id()
            try:
                self._db.execute(
                    "INSERT INTO conversations (id, title, title_auto, model, system_prompt, "
                    "params, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        conversation_id,
                        title,
                        int(title_auto),
                        new.model,
                        new.system_prompt,
                        new.params.model_dump_json(exclude_none=True),
                        now,
                        now,
                    ),
                )
            except sqlite3.IntegrityError:
                continue  # the id is taken: one in a trillion, so another draw
            return conversation_id
        raise sqlite3.IntegrityError("no free conversation id after 5 draws")

    def update(self, conversation_id: str, update: ConversationUpdate) -> Conversation:
        """Change the fields the update sets; an explicit `title: null` (or a blank one)
        returns to the title taken from the first message."""
        given = update.model_fields_set
        changes: dict[str, Any] = {}
        if "title" in given:
            title = (update.title or "").strip()
            changes["title_auto"] = int(not title)
            changes["title"] = title or DEFAULT_TITLE
        if "model" in given:
            changes["model"] = update.model
        if "system_prompt" in given:
            _check_length(update.system_prompt)
            changes["system_prompt"] = update.system_prompt or ""
        if "params" in given:
            params = update.params or SamplingParams()
            changes["params"] = params.model_dump_json(exclude_none=True)
        with transaction(self._db):
            self._touch(conversation_id, **changes)
            self._retitle(conversation_id)
        return self.conversation(conversation_id)

    def delete(self, conversation_id: str) -> None:
        with transaction(self._db):
            gone = self._db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
            if gone.rowcount == 0:
                raise _no_conversation(conversation_id)

    # -- messages ---------------------------------------------------------------------------

    def add_message(self, conversation_id: str, new: NewMessage) -> Message:
        _check_length(new.content)
        _check_length(new.reasoning)
        now = self._clock()
        with transaction(self._db):
            self._touch(conversation_id)
            message_id = self._insert_message(conversation_id, new, now)
            self._retitle(conversation_id)
        return Message(**new.model_dump(), id=message_id, created_at=now)

    def edit_message(self, conversation_id: str, message_id: int, edit: MessageEdit) -> Message:
        _check_length(edit.content)
        with transaction(self._db):
            self._touch(conversation_id)
            self._check_message(conversation_id, message_id)
            self._db.execute(
                "UPDATE messages SET content = ? WHERE id = ?", (edit.content, message_id)
            )
            self._retitle(conversation_id)
            row = self._db.execute(_MESSAGE + " WHERE id = ?", (message_id,)).fetchone()
        return self._message(row)

    def delete_messages_from(self, conversation_id: str, message_id: int) -> None:
        """Delete the message and every later one of its conversation (regenerate, edit and
        resend)."""
        with transaction(self._db):
            self._touch(conversation_id)
            self._check_message(conversation_id, message_id)
            self._db.execute(
                "DELETE FROM messages WHERE conversation_id = ? AND id >= ?",
                (conversation_id, message_id),
            )
            self._retitle(conversation_id)

    # -- helpers ----------------------------------------------------------------------------

    def _insert_message(self, conversation_id: str, message: NewMessage, now: float) -> int:
        cursor = self._db.execute(
            "INSERT INTO messages (conversation_id, role, content, reasoning, stats, "
            "created_at, images) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                conversation_id,
                message.role.value,
                message.content,
                message.reasoning,
                _stats_json(message.stats),
                now,
                json.dumps(list(message.images)) if message.images else None,
            ),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def _touch(self, conversation_id: str, **changes: Any) -> None:
        """Set `changes` and the time of the last update; NotFoundError if it is gone."""
        columns = {**changes, "updated_at": self._clock()}
        assignments = ", ".join(f"{name} = ?" for name in columns)
        cursor = self._db.execute(
            f"UPDATE conversations SET {assignments} WHERE id = ?",  # names are ours, not input
            (*columns.values(), conversation_id),
        )
        if cursor.rowcount == 0:
            raise _no_conversation(conversation_id)

    def _check_message(self, conversation_id: str, message_id: int) -> None:
        row = self._db.execute(
            "SELECT 1 FROM messages WHERE id = ? AND conversation_id = ?",
            (message_id, conversation_id),
        ).fetchone()
        if row is None:
            raise NotFoundError(
                f"The conversation {conversation_id} has no message {message_id}; it may have "
                "been deleted. Reload the conversation."
            )

    def _retitle(self, conversation_id: str) -> None:
        """While the title is automatic, it follows the first user message."""
        first = self._db.execute(
            "SELECT content FROM messages WHERE conversation_id = ? AND role = ? "
            "ORDER BY id LIMIT 1",
            (conversation_id, Role.USER.value),
        ).fetchone()
        self._db.execute(
            "UPDATE conversations SET title = ? WHERE id = ? AND title_auto = 1",
            (title_from(first[0] if first else None), conversation_id),
        )

    @staticmethod
    def _summary(row: Any) -> ConversationSummary:
        return ConversationSummary(
            id=row[0],
            title=row[1],
            model=row[2],
            created_at=row[3],
            updated_at=row[4],
            message_count=row[5],
        )

    @staticmethod
    def _message(row: Any) -> Message:
        return Message(
            id=row[0],
            role=Role(row[1]),
            content=row[2],
            reasoning=row[3],
            stats=ReplyStats.model_validate(json.loads(row[4])) if row[4] else None,
            created_at=row[5],
            images=tuple(json.loads(row[6])) if row[6] else (),
        )


def _no_conversation(conversation_id: str) -> NotFoundError:
    return NotFoundError(
        f"No conversation {conversation_id} in the chat history; it may have been deleted. "
        "List them with `roundhouse chats list`."
    )
