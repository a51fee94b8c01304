"""Routes of the chat history: conversations and their messages, kept by the daemon."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import PlainTextResponse, StreamingResponse
from pydantic import ValidationError

from roundhouse.api.chat import (
    MAX_SEARCH_HITS,
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
from roundhouse.core.chat.transfer import parse_export, to_markdown
from roundhouse.core.chat.turns import GatewayAnswer
from roundhouse.core.errors import InvalidInputError, NotFoundError
from roundhouse.core.gateway.active import answered_by
from roundhouse.server.deps import Chats, Services
from roundhouse.server.routes.gateway import chat_reply
from roundhouse.server.streams import until_stopped

router = APIRouter(prefix="/chats", tags=["chats"])


@router.get("", response_model=ConversationList)
async def list_chats(
    chats: Chats,
    limit: int | None = Query(default=None, ge=1, le=100_000, description="at most this many"),
) -> ConversationList:
    """The conversations, the most recently updated first, without their messages."""
    return ConversationList(conversations=await chats.summaries(limit))


@router.post("", response_model=Conversation, status_code=201)
async def create_chat(new: NewConversation, chats: Chats, services: Services) -> Conversation:
    """Start a conversation; beyond `chat.max_conversations` the least recently updated
    ones are deleted. A reply in it makes its model the active one."""
    created = await chats.create(new)
    services.remember_active_model(services.gateway.listed_as(answered_by(new.messages)))
    return created


@router.post(
    "/turns",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def chat_turn(request: TurnRequest, services: Services) -> StreamingResponse:
    """One turn, run by the daemon, as server-sent events: `started` (TurnStarted, once the
    user's message is saved), `delta` (ChatDelta) for each piece of the reply as the gateway
    streams it, then `ended` (TurnEnded: the reply with its figures, as saved). A stopped
    turn (`/turns/{turn_id}/stop`, or its client gone) ends with what came, saved as
    stopped; a failed one is saved with its error. A refusal (no such conversation, no
    model) answers before anything streams."""
    turns = services.chat_turns
    turn = await turns.begin(request)

    def answered(reply: NewMessage) -> None:
        services.remember_active_model(services.gateway.listed_as(answered_by([reply])))

    def open_reply(body: dict[str, Any]) -> AbstractAsyncContextManager[GatewayAnswer]:
        return chat_reply(services, body)

    events = turns.run(turn, open_reply, answered)
    return StreamingResponse(
        _sse(until_stopped(events, services.stopping)),
        media_type="text/event-stream",
        headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
    )


@router.post("/turns/{turn_id}/stop", status_code=204, response_class=Response)
async def stop_turn(turn_id: str, services: Services) -> Response:
    """Stop a turn's reply: its stream ends with what came, saved as stopped."""
    if not services.chat_turns.stop(turn_id):
        raise NotFoundError(f"No chat turn {turn_id} is running: it has ended already.")
    return Response(status_code=204)


_EVENT_NAMES = {TurnStarted: "started", ChatDelta: "delta", TurnEnded: "ended"}


async def _sse(events: AsyncIterator[TurnStarted | ChatDelta | TurnEnded]) -> AsyncIterator[bytes]:
    async for item in events:
        name = _EVENT_NAMES[type(item)]
        yield f"event: {name}\ndata: {item.model_dump_json()}\n\n".encode()


@router.get("/search", response_model=SearchResults)
async def search_chats(
    chats: Chats,
    q: str = Query(max_length=1_000, description="the words to find"),
    limit: int = Query(default=50, ge=1, le=MAX_SEARCH_HITS, description="at most this many"),
) -> SearchResults:
    """Conversations whose title holds the words, then messages that do (every branch),
    the most recently updated conversation first, each hit with a snippet."""
    return await chats.search(q, limit)


@router.get("/presets", response_model=PresetList)
async def list_presets(chats: Chats) -> PresetList:
    """The saved system-prompt presets, by name."""
    return PresetList(presets=await chats.presets())


@router.put("/presets/{name}", response_model=Preset)
async def save_preset(name: str, body: PresetText, chats: Chats) -> Preset:
    """Save a preset under this name (any case), replacing the text of one that has it."""
    try:
        preset = Preset(name=name, text=body.text)
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"].removeprefix("Value error, ")
        raise InvalidInputError(f"Not saved: {reason}. Give the preset another name.") from exc
    return await chats.save_preset(preset)


@router.delete("/presets/{name}", status_code=204, response_class=Response)
async def delete_preset(name: str, chats: Chats) -> Response:
    """Remove a preset; conversations that use it keep its text."""
    await chats.delete_preset(name)
    return Response(status_code=204)


@router.post("/import", response_model=Conversation, status_code=201)
async def import_chat(request: Request, chats: Chats) -> Conversation:
    """Add a conversation from a JSON export (a ChatExport) with every branch: checked
    whole first (size, format, version, shape) and added in one transaction."""
    export = parse_export(await request.body())
    return await chats.import_export(export)


@router.get("/{conversation_id}", response_model=Conversation)
async def get_chat(conversation_id: str, chats: Chats) -> Conversation:
    return await chats.conversation(conversation_id)


@router.patch("/{conversation_id}", response_model=Conversation)
async def update_chat(
    conversation_id: str, update: ConversationUpdate, chats: Chats
) -> Conversation:
    """Change the fields given; `"title": null` returns to the title of the first message."""
    return await chats.update(conversation_id, update)


@router.get(
    "/{conversation_id}/export",
    response_model=ChatExport,
    responses={200: {"content": {"text/markdown": {}}}},
)
async def export_chat(
    conversation_id: str,
    chats: Chats,
    format: str = Query(default="json", pattern="^(json|md)$", description="json or md"),
) -> ChatExport | PlainTextResponse:
    """The conversation as JSON with every branch (what import reads), or as Markdown with
    the branch shown."""
    if format == "md":
        markdown = to_markdown(await chats.conversation(conversation_id))
        return PlainTextResponse(markdown, media_type="text/markdown; charset=utf-8")
    return await chats.export(conversation_id)


@router.post("/{conversation_id}/branch", response_model=Conversation)
async def switch_branch(conversation_id: str, switch: BranchSwitch, chats: Chats) -> Conversation:
    """Show this version of a message (one of its `sibling_ids`); the conversation then
    follows it to its newest descendant."""
    return await chats.switch_branch(conversation_id, switch.message_id)


@router.delete("/{conversation_id}", status_code=204, response_class=Response)
async def delete_chat(conversation_id: str, chats: Chats) -> Response:
    await chats.delete(conversation_id)
    return Response(status_code=204)


@router.post("/{conversation_id}/messages", response_model=Message, status_code=201)
async def add_message(
    conversation_id: str, new: NewMessage, chats: Chats, services: Services
) -> Message:
    """Add a message; a reply that did not fail makes its model the active one."""
    added = await chats.add_message(conversation_id, new)
    services.remember_active_model(services.gateway.listed_as(answered_by([new])))
    return added


@router.put("/{conversation_id}/messages/{message_id}", response_model=Message)
async def edit_message(
    conversation_id: str, message_id: int, edit: MessageEdit, chats: Chats
) -> Message:
    return await chats.edit_message(conversation_id, message_id, edit)


@router.delete("/{conversation_id}/messages/{message_id}", status_code=204, response_class=Response)
async def delete_messages_from(conversation_id: str, message_id: int, chats: Chats) -> Response:
    """Delete this message and everything that followed it, in every branch."""
    await chats.delete_messages_from(conversation_id, message_id)
    return Response(status_code=204)
