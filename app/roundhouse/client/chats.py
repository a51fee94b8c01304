"""The chat history's calls of the daemon client (mixed into DaemonClient)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from roundhouse.api.chat import (
    BranchSwitch,
    ChatDelta,
    ChatExport,
    Conversation,
    ConversationList,
    ConversationUpdate,
    Message,
    MessageEdit,
    NewConversation,
    NewMessage,
    Preset,
    PresetList,
    PresetText,
    SearchResults,
    TurnEnded,
    TurnRequest,
    TurnStarted,
)

M = TypeVar("M", bound=BaseModel)
_JSON = {"Content-Type": "application/json"}
TurnEvent = TurnStarted | ChatDelta | TurnEnded


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

        def _stream(
            self, path: str, event_names: tuple[str, ...], *, method: str = "GET", **kwargs: Any
        ) -> AsyncGenerator[tuple[str, str], None]: ...

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
        """Delete the message and everything that followed it, in every branch."""
        await self._send("DELETE", f"{_chat(conversation_id)}/messages/{message_id}")

    async def switch_chat_branch(self, conversation_id: str, message_id: int) -> Conversation:
        """Show this version of a message; the path follows its newest descendant."""
        body = BranchSwitch(message_id=message_id).model_dump_json()
        path = f"{_chat(conversation_id)}/branch"
        return await self._request("POST", path, Conversation, content=body, headers=_JSON)

    async def search_chats(self, text: str, limit: int = 50) -> SearchResults:
        params = {"q": text, "limit": str(limit)}
        return await self._request("GET", "/chats/search", SearchResults, params=params)

    async def export_chat(self, conversation_id: str) -> ChatExport:
        """The conversation with every branch, as import reads it."""
        path = f"{_chat(conversation_id)}/export"
        return await self._request("GET", path, ChatExport, params={"format": "json"})

    async def export_chat_markdown(self, conversation_id: str) -> str:
        """The branch shown, as Markdown."""
        path = f"{_chat(conversation_id)}/export"
        return (await self._send("GET", path, params={"format": "md"})).text

    async def import_chat(self, raw: bytes) -> Conversation:
        """Add a conversation from a JSON export's bytes (checked by the daemon)."""
        return await self._request(
            "POST", "/chats/import", Conversation, content=raw, headers=_JSON
        )

    async def chat_presets(self) -> PresetList:
        return await self._request("GET", "/chats/presets", PresetList)

    async def save_chat_preset(self, name: str, text: str) -> Preset:
        path = "/chats/presets/" + quote(name, safe="")
        body = PresetText(text=text).model_dump_json()
        return await self._request("PUT", path, Preset, content=body, headers=_JSON)

    async def delete_chat_preset(self, name: str) -> None:
        await self._send("DELETE", "/chats/presets/" + quote(name, safe=""))

    async def chat_turn(self, request: TurnRequest) -> AsyncGenerator[TurnEvent, None]:
        """One chat turn run by the daemon: TurnStarted (the user's message saved), a
        ChatDelta for each piece of the reply, then TurnEnded (the reply as saved, with its
        figures). Raises ApiError when the daemon refuses the turn. Closing this early
        stops the reply, which the daemon saves as far as it came; `stop_chat_turn` does the
        same and lets the stream end with the TurnEnded."""
        body = request.model_dump_json(exclude_defaults=True)
        stream = self._stream(
            "/chats/turns",
            ("started", "delta", "ended"),
            method="POST",
            content=body,
            headers=_JSON,
        )
        async with aclosing(stream) as events:
            async for name, data in events:
                if name == "delta":
                    yield ChatDelta.model_validate_json(data)
                elif name == "started":
                    yield TurnStarted.model_validate_json(data)
                else:
                    yield TurnEnded.model_validate_json(data)
                    return

    async def stop_chat_turn(self, turn_id: str) -> None:
        """Stop a turn's reply: its stream ends with what came, saved as stopped."""
        await self._send("POST", f"/chats/turns/{quote(turn_id, safe='')}/stop")
