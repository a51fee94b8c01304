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
    ChatExport,
    Conversation,
    ConversationSummary,
    ConversationUpdate,
    Message,
    MessageEdit,
    NewConversation,
    NewMessage,
    Preset,
    ReplyStats,
    Role,
    SamplingParams,
    SearchResults,
)
from roundhouse.core.chat.schema import MIGRATIONS
from roundhouse.core.chat.search import search
from roundhouse.core.chat.titles import DEFAULT_TITLE, title_from
from roundhouse.core.chat.transfer import to_export
from roundhouse.core.errors import InvalidInputError, NotFoundError
from roundhouse.core.infra.sqlite import connect_wal, transaction

Clock = Callable[[], float]

_SUMMARY = """
    SELECT c.id, c.title, c.model, c.created_at, c.updated_at,
           (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id)
    FROM conversations c
"""
_NEWEST_FIRST = " ORDER BY c.updated_at DESC, c.rowid DESC"
_MESSAGE = "SELECT id, role, content, reasoning, stats, created_at, images, parent_id FROM messages"
# The current path: from the conversation's leaf up through each parent (ids grow downwards,
# a parent being written before its children, so `ORDER BY id` reads it top to bottom).
_PATH = """
    WITH RECURSIVE path (id) AS (
        SELECT leaf_id FROM conversations WHERE id = ? AND leaf_id IS NOT NULL
        UNION ALL
        SELECT m.parent_id FROM messages m JOIN path ON m.id = path.id
        WHERE m.parent_id IS NOT NULL
    )
"""
# The newest message under one (itself included): a child is newer than its parent, so the
# newest one has no children and ends the branch that was written last.
_NEWEST_UNDER = """
    WITH RECURSIVE below (id) AS (
        SELECT ? UNION ALL SELECT m.id FROM messages m JOIN below ON m.parent_id = below.id
    )
    SELECT MAX(id) FROM below
"""


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
        """The conversation with the messages of its current path, each knowing its
        siblings (the other versions an edit or a regenerate left)."""
        row = self._db.execute(
            "SELECT system_prompt, params, preset FROM conversations WHERE id = ?",
            (conversation_id,),
        ).fetchone()
        if row is None:
            raise _no_conversation(conversation_id)
        summary = self._db.execute(_SUMMARY + " WHERE c.id = ?", (conversation_id,)).fetchone()
        messages = self._db.execute(
            _PATH + _MESSAGE + " WHERE id IN (SELECT id FROM path) ORDER BY id",
            (conversation_id,),
        ).fetchall()
        siblings = self._siblings(conversation_id)
        return Conversation(
            **self._summary(summary).model_dump(),
            system_prompt=row[0],
            params=SamplingParams.model_validate_json(row[1]),
            preset=row[2],
            messages=[self._message(m, siblings) for m in messages],
        )

    def all_messages(self, conversation_id: str) -> tuple[list[Message], int | None]:
        """Every message of every branch, parents first, and the current path's last."""
        row = self._db.execute(
            "SELECT leaf_id FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if row is None:
            raise _no_conversation(conversation_id)
        rows = self._db.execute(
            _MESSAGE + " WHERE conversation_id = ? ORDER BY id", (conversation_id,)
        ).fetchall()
        siblings = self._siblings(conversation_id)
        return [self._message(m, siblings) for m in rows], row[0]

    def _siblings(self, conversation_id: str) -> dict[int | None, tuple[int, ...]]:
        """Each parent's children, oldest first (None: the conversation's first messages)."""
        rows = self._db.execute(
            "SELECT parent_id, id FROM messages WHERE conversation_id = ? ORDER BY id",
            (conversation_id,),
        ).fetchall()
        children: dict[int | None, list[int]] = {}
        for parent, message_id in rows:
            children.setdefault(parent, []).append(message_id)
        return {parent: tuple(ids) for parent, ids in children.items()}

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
            parent: int | None = None
            for message in new.messages:
                parent = self._insert_message(conversation_id, message, now, parent)
            self._set_leaf(conversation_id, parent)
            self._trim(max_conversations)
        return self.conversation(conversation_id)

    def _trim(self, max_conversations: int) -> None:
        """Delete the least recently updated conversations beyond `max_conversations`."""
        self._db.execute(
            "DELETE FROM conversations WHERE id IN (SELECT c.id FROM conversations c"
            + _NEWEST_FIRST
            + " LIMIT -1 OFFSET ?)",
            (max_conversations,),
        )

    def _insert_conversation(
        self, title: str, title_auto: bool, new: NewConversation, now: float
    ) -> str:
        for _ in range(5):
            conversation_id = new_conversation_id()
            try:
                self._db.execute(
                    "INSERT INTO conversations (id, title, title_auto, model, system_prompt, "
                    "preset, params, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        conversation_id,
                        title,
                        int(title_auto),
                        new.model,
                        new.system_prompt,
                        new.preset,
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
        if "preset" in given:
            changes["preset"] = update.preset
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
        """Add a message after the current path's last; it becomes the path's last."""
        _check_length(new.content)
        _check_length(new.reasoning)
        now = self._clock()
        with transaction(self._db):
            self._touch(conversation_id)
            parent = self._leaf(conversation_id)
            message_id = self._insert_message(conversation_id, new, now, parent)
            self._set_leaf(conversation_id, message_id)
            self._retitle(conversation_id)
        return self._read_message(conversation_id, message_id)

    def edit_message(self, conversation_id: str, message_id: int, edit: MessageEdit) -> Message:
        _check_length(edit.content)
        with transaction(self._db):
            self._touch(conversation_id)
            self._check_message(conversation_id, message_id)
            self._db.execute(
                "UPDATE messages SET content = ? WHERE id = ?", (edit.content, message_id)
            )
            self._retitle(conversation_id)
        return self._read_message(conversation_id, message_id)

    def rewind(self, conversation_id: str, message_id: int) -> None:
        """Go back to just before the message (an edit, a regenerate): the path ends at its
        parent, and the message with what followed stays, a branch to switch back to."""
        with transaction(self._db):
            self._touch(conversation_id)
            parent = self._check_message(conversation_id, message_id)
            self._set_leaf(conversation_id, parent)

    def switch_branch(self, conversation_id: str, message_id: int) -> Conversation:
        """Show this version of a message: the path goes through it to its newest
        descendant."""
        with transaction(self._db):
            self._check_message(conversation_id, message_id)
            newest = self._db.execute(_NEWEST_UNDER, (message_id,)).fetchone()[0]
            # Not an update of the conversation: switching does not move it up the list.
            self._set_leaf(conversation_id, newest)
            self._retitle(conversation_id)
        return self.conversation(conversation_id)

    def delete_messages_from(self, conversation_id: str, message_id: int) -> None:
        """Delete the message and everything that followed it, in every branch; the path
        then ends at the newest message left under its parent."""
        with transaction(self._db):
            self._touch(conversation_id)
            parent = self._check_message(conversation_id, message_id)
            # The children go with it (ON DELETE CASCADE on parent_id).
            self._db.execute("DELETE FROM messages WHERE id = ?", (message_id,))
            leaf = self._leaf(conversation_id)
            if leaf is None or not self._exists(leaf):
                if parent is not None:
                    leaf = self._db.execute(_NEWEST_UNDER, (parent,)).fetchone()[0]
                else:
                    leaf = self._db.execute(
                        "SELECT MAX(id) FROM messages WHERE conversation_id = ?",
                        (conversation_id,),
                    ).fetchone()[0]
                self._set_leaf(conversation_id, leaf)
            self._retitle(conversation_id)

    # -- search, export, import -------------------------------------------------------------

    def search(self, text: str, limit: int) -> SearchResults:
        return search(self._db, text, limit)

    def export(self, conversation_id: str) -> ChatExport:
        messages, leaf = self.all_messages(conversation_id)
        return to_export(self.conversation(conversation_id), messages, leaf)

    def import_export(self, export: ChatExport, max_conversations: int) -> Conversation:
        """Add the exported conversation with every branch, in one transaction: a failure
        leaves nothing of it. `export` is checked (`transfer.parse_export`)."""
        for message in export.messages:
            _check_length(message.content)
            _check_length(message.reasoning)
        now = self._clock()
        new = NewConversation(
            model=export.model,
            system_prompt=export.system_prompt,
            preset=export.preset,
            params=export.params,
        )
        title = export.title.strip() or DEFAULT_TITLE
        with transaction(self._db):
            conversation_id = self._insert_conversation(title, False, new, now)
            ids: dict[int, int] = {}
            for message in export.messages:
                new_message = NewMessage(
                    role=message.role,
                    content=message.content,
                    reasoning=message.reasoning,
                    stats=message.stats,
                    images=message.images,
                )
                parent = ids[message.parent] if message.parent is not None else None
                ids[message.id] = self._insert_message(
                    conversation_id, new_message, message.created_at, parent
                )
            last = export.messages[-1].id if export.messages else None
            current = export.current if export.current is not None else last
            self._set_leaf(conversation_id, ids[current] if current is not None else None)
            self._db.execute(
                "UPDATE conversations SET created_at = ? WHERE id = ?",
                (export.created_at, conversation_id),
            )
            self._trim(max_conversations)
        return self.conversation(conversation_id)

    # -- system-prompt presets ---------------------------------------------------------------

    def presets(self) -> list[Preset]:
        rows = self._db.execute("SELECT name, text FROM presets ORDER BY name COLLATE NOCASE")
        return [Preset(name=row[0], text=row[1]) for row in rows]

    def preset(self, name: str) -> Preset:
        row = self._db.execute("SELECT name, text FROM presets WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise _no_preset(name)
        return Preset(name=row[0], text=row[1])

    def save_preset(self, preset: Preset, max_presets: int) -> Preset:
        """Add the preset, or replace the text of the one with that name (any case)."""
        _check_length(preset.text)
        now = self._clock()
        with transaction(self._db):
            known = self._db.execute(
                "SELECT 1 FROM presets WHERE name = ?", (preset.name,)
            ).fetchone()
            count = self._db.execute("SELECT COUNT(*) FROM presets").fetchone()[0]
            if known is None and count >= max_presets:
                raise InvalidInputError(
                    f"There are {count} presets already, the most kept. Remove one first "
                    "(`roundhouse chats presets remove NAME`)."
                )
            self._db.execute(
                "INSERT INTO presets (name, text, created_at, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET text = excluded.text, "
                "updated_at = excluded.updated_at",
                (preset.name, preset.text, now, now),
            )
        return self.preset(preset.name)

    def delete_preset(self, name: str) -> None:
        """Remove a preset; the conversations that use it keep its text."""
        with transaction(self._db):
            gone = self._db.execute("DELETE FROM presets WHERE name = ?", (name,))
            if gone.rowcount == 0:
                raise _no_preset(name)

    # -- helpers ----------------------------------------------------------------------------

    def _insert_message(
        self, conversation_id: str, message: NewMessage, now: float, parent: int | None
    ) -> int:
        cursor = self._db.execute(
            "INSERT INTO messages (conversation_id, role, content, reasoning, stats, "
            "created_at, images, parent_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                conversation_id,
                message.role.value,
                message.content,
                message.reasoning,
                _stats_json(message.stats),
                now,
                json.dumps(list(message.images)) if message.images else None,
                parent,
            ),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def _leaf(self, conversation_id: str) -> int | None:
        row = self._db.execute(
            "SELECT leaf_id FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        return row[0] if row is not None else None

    def _set_leaf(self, conversation_id: str, leaf: int | None) -> None:
        self._db.execute(
            "UPDATE conversations SET leaf_id = ? WHERE id = ?", (leaf, conversation_id)
        )

    def _exists(self, message_id: int) -> bool:
        row = self._db.execute("SELECT 1 FROM messages WHERE id = ?", (message_id,)).fetchone()
        return row is not None

    def _read_message(self, conversation_id: str, message_id: int) -> Message:
        row = self._db.execute(_MESSAGE + " WHERE id = ?", (message_id,)).fetchone()
        return self._message(row, self._siblings(conversation_id))

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

    def _check_message(self, conversation_id: str, message_id: int) -> int | None:
        """The message's parent; NotFoundError when the conversation has no such message."""
        row = self._db.execute(
            "SELECT parent_id FROM messages WHERE id = ? AND conversation_id = ?",
            (message_id, conversation_id),
        ).fetchone()
        if row is None:
            raise NotFoundError(
                f"The conversation {conversation_id} has no message {message_id}; it may have "
                "been deleted. Reload the conversation."
            )
        parent: int | None = row[0]
        return parent

    def _retitle(self, conversation_id: str) -> None:
        """While the title is automatic, it follows the first user message of the path
        shown (an edit of the first message, or a switch to another version of it, renames
        the conversation; switching back names it as before)."""
        first = self._db.execute(
            _PATH + "SELECT content FROM messages WHERE id IN (SELECT id FROM path) "
            "AND role = ? ORDER BY id LIMIT 1",
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
    def _message(row: Any, siblings: dict[int | None, tuple[int, ...]]) -> Message:
        return Message(
            id=row[0],
            role=Role(row[1]),
            content=row[2],
            reasoning=row[3],
            stats=ReplyStats.model_validate(json.loads(row[4])) if row[4] else None,
            created_at=row[5],
            images=tuple(json.loads(row[6])) if row[6] else (),
            parent_id=row[7],
            sibling_ids=siblings.get(row[7], (row[0],)),
        )


def _no_preset(name: str) -> NotFoundError:
    return NotFoundError(
        f"No system-prompt preset named “{name}”. List them with `roundhouse chats presets list`."
    )


def _no_conversation(conversation_id: str) -> NotFoundError:
    return NotFoundError(
        f"No conversation {conversation_id} in the chat history; it may have been deleted. "
        "List them with `roundhouse chats list`."
    )
