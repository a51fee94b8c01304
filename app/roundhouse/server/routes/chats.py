"""Routes of the chat history: conversations and their messages, kept by the daemon."""

from __future__ import annotations

from fastapi import APIRouter, Query, Response

from roundhouse.api.chat import (
    Conversation,
    ConversationList,
    ConversationUpdate,
    Message,
    MessageEdit,
    NewConversation,
    NewMessage,
)
from roundhouse.core.gateway.active import answered_by
from roundhouse.server.deps import Services

router = APIRouter(prefix="/chats", tags=["chats"])


@router.get("", response_model=ConversationList)
async def list_chats(
    services: Services,
    limit: int | None = Query(default=None, ge=1, le=100_000, description="at most this many"),
) -> ConversationList:
    """The conversations, the most recently updated first, without their messages."""
    return ConversationList(conversations=await services.chat_store().summaries(limit))


@router.post("", response_model=Conversation, status_code=201)
async def create_chat(new: NewConversation, services: Services) -> Conversation:
    """Start a conversation; beyond `chat.max_conversations` the least recently updated
    ones are deleted. A reply in it makes its model the active one."""
    created = await services.chat_store().create(new)
    services.remember_active_model(services.gateway().listed_as(answered_by(new.messages)))
    return created


@router.get("/{conversation_id}", response_model=Conversation)
async def get_chat(conversation_id: str, services: Services) -> Conversation:
    return await services.chat_store().conversation(conversation_id)


@router.patch("/{conversation_id}", response_model=Conversation)
async def update_chat(
    conversation_id: str, update: ConversationUpdate, services: Services
) -> Conversation:
    """Change the fields given; `"title": null` returns to the title of the first message."""
    return await services.chat_store().update(conversation_id, update)


@router.delete("/{conversation_id}", status_code=204, response_class=Response)
async def delete_chat(conversation_id: str, services: Services) -> Response:
    await services.chat_store().delete(conversation_id)
    return Response(status_code=204)


@router.post("/{conversation_id}/messages", response_model=Message, status_code=201)
async def add_message(conversation_id: str, new: NewMessage, services: Services) -> Message:
    """Add a message; a reply that did not fail makes its model the active one."""
    added = await services.chat_store().add_message(conversation_id, new)
    services.remember_active_model(services.gateway().listed_as(answered_by([new])))
    return added


@router.put("/{conversation_id}/messages/{message_id}", response_model=Message)
async def edit_message(
    conversation_id: str, message_id: int, edit: MessageEdit, services: Services
) -> Message:
    return await services.chat_store().edit_message(conversation_id, message_id, edit)


@router.delete("/{conversation_id}/messages/{message_id}", status_code=204, response_class=Response)
async def delete_messages_from(
    conversation_id: str, message_id: int, services: Services
) -> Response:
    """Delete this message and every later one (regenerate; edit and resend)."""
    await services.chat_store().delete_messages_from(conversation_id, message_id)
    return Response(status_code=204)
