"""The chat history as the daemon uses it: async, off the event loop, errors in words."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from roundhouse.api.chat import (
    ChatExport,
    Conversation,
    ConversationSummary,
    ConversationUpdate,
    Message,
    MessageEdit,
    NewConversation,
    NewMessage,
    Preset,
    SearchResults,
)
from roundhouse.core.chat.database import ChatDatabase, Clock, connect
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.infra.sqlite import NewerSchemaError

log = logging.getLogger(__name__)

T = TypeVar("T")

CHAT_FILE = "chat.sqlite3"
# Presets are a menu: beyond this many, one is removed before another is added.
MAX_PRESETS = 200


class ChatHistoryError(RoundhouseError):
    """The chat file cannot be opened or read: the detail says where it is and what to do."""

    title = "Chat history unavailable"
    status = 500


class ChatStore:
    """Conversations in one SQLite file (WAL), bounded to `max_conversations()`.

    Every call runs in a worker thread under one lock, on one connection. The file is opened
    on first use, and again after a failure: a damaged file costs the chat, not the daemon,
    and once the user moves it away the next request starts a fresh history.
    """

    def __init__(
        self,
        path: Path,
        max_conversations: Callable[[], int],
        clock: Clock = time.time,
    ) -> None:
        self.path = path
        self._max_conversations = max_conversations
        self._clock = clock
        self._lock = threading.Lock()
        self._db: ChatDatabase | None = None

    async def summaries(self, limit: int | None = None) -> list[ConversationSummary]:
        return await self._run(lambda db: db.summaries(limit))

    async def conversation(self, conversation_id: str) -> Conversation:
        return await self._run(lambda db: db.conversation(conversation_id))

    async def create(self, new: NewConversation) -> Conversation:
        return await self._run(lambda db: db.create(new, self._max_conversations()))

    async def update(self, conversation_id: str, update: ConversationUpdate) -> Conversation:
        return await self._run(lambda db: db.update(conversation_id, update))

    async def delete(self, conversation_id: str) -> None:
        await self._run(lambda db: db.delete(conversation_id))

    async def add_message(self, conversation_id: str, new: NewMessage) -> Message:
        return await self._run(lambda db: db.add_message(conversation_id, new))

    async def edit_message(
        self, conversation_id: str, message_id: int, edit: MessageEdit
    ) -> Message:
        return await self._run(lambda db: db.edit_message(conversation_id, message_id, edit))

    async def delete_messages_from(self, conversation_id: str, message_id: int) -> None:
        await self._run(lambda db: db.delete_messages_from(conversation_id, message_id))

    async def rewind(self, conversation_id: str, message_id: int) -> None:
        await self._run(lambda db: db.rewind(conversation_id, message_id))

    async def switch_branch(self, conversation_id: str, message_id: int) -> Conversation:
        return await self._run(lambda db: db.switch_branch(conversation_id, message_id))

    async def search(self, text: str, limit: int = 50) -> SearchResults:
        return await self._run(lambda db: db.search(text, limit))

    async def export(self, conversation_id: str) -> ChatExport:
        return await self._run(lambda db: db.export(conversation_id))

    async def import_export(self, export: ChatExport) -> Conversation:
        return await self._run(lambda db: db.import_export(export, self._max_conversations()))

    async def presets(self) -> list[Preset]:
        return await self._run(lambda db: db.presets())

    async def preset(self, name: str) -> Preset:
        return await self._run(lambda db: db.preset(name))

    async def save_preset(self, preset: Preset) -> Preset:
        return await self._run(lambda db: db.save_preset(preset, MAX_PRESETS))

    async def delete_preset(self, name: str) -> None:
        await self._run(lambda db: db.delete_preset(name))

    async def close(self) -> None:
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    async def _run(self, operation: Callable[[ChatDatabase], T]) -> T:
        return await asyncio.to_thread(self._locked, operation)

    def _locked(self, operation: Callable[[ChatDatabase], T]) -> T:
        with self._lock:
            try:
                if self._db is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._db = ChatDatabase(connect(self.path), self._clock)
                return operation(self._db)
            except NewerSchemaError as exc:
                raise ChatHistoryError(
                    f"The chat history at {self.path} was written by a newer Roundhouse "
                    f"({exc}). Update Roundhouse, or move the file away to start a fresh "
                    "history."
                ) from exc
            except sqlite3.DatabaseError as exc:
                self._forget()
                log.error("Chat history %s failed: %s", self.path, exc)
                raise ChatHistoryError(self._advice(exc)) from exc

    def _forget(self) -> None:
        """Drop the connection after a failure, so the next call opens the file again."""
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                log.warning("Closing the failed chat history %s failed too", self.path)
            self._db = None

    def _advice(self, exc: sqlite3.DatabaseError) -> str:
        where = f"The chat history at {self.path}"
        if isinstance(exc, sqlite3.OperationalError):
            # Locked, read-only, full disk, missing folder: the file itself may be fine.
            return (
                f"{where} cannot be used ({exc}). Check that the disk has space and that "
                "the folder is writable, and that no other program holds the file."
            )
        return (
            f"{where} is damaged and cannot be read ({exc}). Move it away (with the "
            f"{self.path.name}-wal and -shm files beside it) and Roundhouse starts a fresh "
            "history; the daemon keeps running meanwhile."
        )
