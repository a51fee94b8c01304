"""The chat history's calls of the daemon client (mixed into DaemonClient)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from roundhouse.api.chat import (
    Conversation,
    ConversationList,
    ConversationUpdate,
    Message,
    MessageEdit,
    NewConversation,
    NewMessage,
)

M = TypeVar("M", bound=BaseModel)
_JSON = {"Content-Type": "application/json"}
# A just-in-time start may load a model for minutes before the first byte; the user stops a
# reply that hangs, and the gateway has its own queue and start limits.
_REPLY_TIMEOUT = httpx.Timeout(30.0, connect=2.0, read=900.0)


def _chat(conversation_id: str) -> str:
    return "/chats/" + quote(conversation_id, safe="")


class ChatsMixin:
    """Conversations and messages kept by the daemon (`/api/v1/chats`)."""

    if TYPE_CHECKING:
        # Provided by DaemonClient.
        base_url: str
        _http: httpx.AsyncClient

        async def _request(self, method: str, path: str, model: type[M], **kwargs: Any) -> M: ...

        async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response: ...

    async def chats(self, limit: int | None = None) -> ConversationList:
        """The conversations, the most recently updated first, without their messages."""
        params = {"limit": str(limit)} if limit is not None else {}
        return await self._request("GET", "/chats", ConversationList, params=params)

    async def chat(self, conversation_id: str) -> Conversation:
        return await self._request("GET", _chat(conversation_id), Conversation)

    async def create_chat(self, new: NewConversation) -> Conversation:
        body = new.model_dump_json()
        return await self._request("POST", "/chats", Conversation, content=body, headers=_JSON)

    async def update_chat(self, conversation_id: str, update: ConversationUpdate) -> Conversation:
        """Change the fields the update sets (an explicit None included: a `title` of None
        returns to the title taken from the first message)."""
        body = update.model_dump_json(exclude_unset=True)
        path = _chat(conversation_id)
        return await self._request("PATCH", path, Conversation, content=body, headers=_JSON)

    async def delete_chat(self, conversation_id: str) -> None:
        await self._send("DELETE", _chat(conversation_id))

    async def add_message(self, conversation_id: str, new: NewMessage) -> Message:
        body = new.model_dump_json(exclude_none=True)
        path = f"{_chat(conversation_id)}/messages"
        return await self._request("POST", path, Message, content=body, headers=_JSON)

    async def edit_message(
        self, conversation_id: str, message_id: int, edit: MessageEdit
    ) -> Message:
        path = f"{_chat(conversation_id)}/messages/{message_id}"
        body = edit.model_dump_json()
        return await self._request("PUT", path, Message, content=body, headers=_JSON)

    async def delete_messages_from(self, conversation_id: str, message_id: int) -> None:
        """Delete the message and every later one of the conversation."""
        await self._send("DELETE", f"{_chat(conversation_id)}/messages/{message_id}")

    def open_chat_completion(
        self, body: dict[str, Any]
    ) -> AbstractAsyncContextManager[httpx.Response]:
        """`POST /v1/chat/completions` through the daemon's gateway, the response streamed,
        with the daemon token as the bearer (the gateway accepts it when a key is set).
        Leaving the block closes the response, which stops the engine's generation."""
        return self._http.stream(
            "POST",
            self.base_url + "/v1/chat/completions",
            json=body,
            headers={"Accept": "text/event-stream"},
            timeout=_REPLY_TIMEOUT,
        )
