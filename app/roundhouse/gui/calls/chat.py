"""The conversations the daemon keeps, and the chat turns it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundhouse.api.chat import ConversationUpdate, NewConversation, TurnRequest
from roundhouse.gui.call import Call, Follow

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge


class ChatCalls:
    """The conversations the daemon keeps, and the chat turns it runs."""

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

    def create(self, new: NewConversation) -> Call:
        """Answers with the Conversation kept (its messages too)."""
        return self._bridge.call("move the exchange to the chat", lambda c: c.create_chat(new))

    def delete(self, conversation_id: str) -> Call:
        return self._bridge.call(
            "delete the conversation", lambda c: c.delete_chat(conversation_id)
        )

    def switch_branch(self, conversation_id: str, message_id: int) -> Call:
        """Answers with the Conversation, its path through that version of the message."""
        return self._bridge.call(
            "show that version", lambda c: c.switch_chat_branch(conversation_id, message_id)
        )

    def search(self, text: str) -> Call:
        """Answers with the SearchResults."""
        return self._bridge.call("search the chats", lambda c: c.search_chats(text))

    def export_json(self, conversation_id: str) -> Call:
        """Answers with the ChatExport (every branch)."""
        return self._bridge.call(
            "export the conversation", lambda c: c.export_chat(conversation_id)
        )

    def export_markdown(self, conversation_id: str) -> Call:
        """Answers with the Markdown text of the branch shown."""
        return self._bridge.call(
            "export the conversation", lambda c: c.export_chat_markdown(conversation_id)
        )

    def import_chat(self, raw: bytes) -> Call:
        """Answers with the Conversation imported."""
        return self._bridge.call("import the conversation", lambda c: c.import_chat(raw))

    def presets(self) -> Call:
        """Answers with the PresetList."""
        return self._bridge.call("list the presets", lambda c: c.chat_presets())

    def save_preset(self, name: str, text: str) -> Call:
        return self._bridge.call("save the preset", lambda c: c.save_chat_preset(name, text))

    def delete_preset(self, name: str) -> Call:
        return self._bridge.call("delete the preset", lambda c: c.delete_chat_preset(name))

    def turn(self, request: TurnRequest) -> Follow:
        """One turn, run by the daemon: receives TurnStarted (the user's message saved),
        ChatDelta items, then TurnEnded (the reply as saved); cancelling closes the stream,
        which stops the reply (the daemon keeps what came)."""
        return self._bridge.follow("send the message", lambda c: c.chat_turn(request))

    def stop_turn(self, turn_id: str) -> Call:
        """Stop the turn's reply: its stream ends with what came, saved as stopped."""
        return self._bridge.call("stop the reply", lambda c: c.stop_chat_turn(turn_id))
