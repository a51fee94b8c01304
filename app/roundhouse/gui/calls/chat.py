"""The conversations the daemon keeps, and replies streamed through its gateway."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING

from roundhouse.api.chat import (
    Conversation,
    ConversationUpdate,
    NewConversation,
    NewMessage,
    SamplingParams,
)
from roundhouse.client.chat_stream import ChatDelta, ChatDone, ChatFailed, ReplyMeter, stream_chat
from roundhouse.gui.call import Call, Follow

if TYPE_CHECKING:
    from roundhouse.client import DaemonClient
    from roundhouse.gui.daemon_bridge import DaemonBridge


class ChatCalls:
    """The conversations the daemon keeps, and replies streamed through its gateway."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    def conversations(self) -> Call:
        """Answers with the ConversationList, the most recently updated first."""
        return self._bridge.call("list the conversations", lambda c: c.chats())

    def conversation(self, conversation_id: str) -> Call:
        """Answers with the Conversation and its messages."""
        return self._bridge.call("open the conversation", lambda c: c.chat(conversation_id))

    def update(self, conversation_id: str, update: ConversationUpdate) -> Call:
        return self._bridge.call(
            "save the conversation", lambda c: c.update_chat(conversation_id, update)
        )

    def delete(self, conversation_id: str) -> Call:
        return self._bridge.call(
            "delete the conversation", lambda c: c.delete_chat(conversation_id)
        )

    def prepare(
        self,
        conversation_id: str | None,
        *,
        new: NewConversation | None = None,
        delete_from: int | None = None,
        user: NewMessage | None = None,
    ) -> Call:
        """Before a reply: create the conversation (`new`) or cut it at `delete_from` (an edit,
        a regenerate), then add the user's message; answers with the Conversation after."""

        async def run(client: DaemonClient) -> Conversation:
            chat_id = conversation_id
            if chat_id is None:
                chat_id = (await client.create_chat(new or NewConversation())).id
            if delete_from is not None:
                await client.delete_messages_from(chat_id, delete_from)
            if user is not None:
                await client.add_message(chat_id, user)
            return await client.chat(chat_id)

        return self._bridge.call("send the message", run)

    def save(self, conversation_id: str, message: NewMessage) -> Call:
        """Answers with the Message saved."""
        return self._bridge.call(
            "save the reply", lambda c: c.add_message(conversation_id, message)
        )

    def reply(
        self,
        model: str,
        messages: list[dict[str, str]],
        params: SamplingParams,
        meter: ReplyMeter,
    ) -> Follow:
        """Receives ChatDelta items, then ChatDone, or a ChatFailed (as an item, with the
        figures so far); cancelling closes the stream, which stops the engine. `meter` keeps
        the figures of a reply that was stopped."""

        async def items(
            client: DaemonClient,
        ) -> AsyncGenerator[ChatDelta | ChatDone | ChatFailed, None]:
            try:
                async with aclosing(
                    stream_chat(client, model, messages, params, meter=meter)
                ) as stream:
                    async for item in stream:
                        yield item
            except ChatFailed as failed:
                yield failed

        return self._bridge.follow("stream the reply", items)
