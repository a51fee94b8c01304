"""The bridge's calls by concern (installs, Ollama, settings, chats): each returns a Call or
Follow.

Widgets reach the daemon through these, never through the client; each method names what it
asks for in words, which failures repeat ("could not <what>").
"""

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
from roundhouse.api.engines import EngineId
from roundhouse.api.installs import InstallRequest
from roundhouse.api.ollama import OllamaLoadRequest
from roundhouse.client.chat_stream import ChatDelta, ChatDone, ChatFailed, ReplyMeter, stream_chat
from roundhouse.gui.call import Call, Follow

if TYPE_CHECKING:
    from roundhouse.client import DaemonClient
    from roundhouse.gui.daemon_bridge import DaemonBridge


class InstallCalls:
    """Engine installs (jobs followed live) and llama.cpp's builds."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    def start(self, engine: EngineId, request: InstallRequest) -> Call:
        """Answers with the InstallJob the daemon started; follow it with `follow`."""
        return self._bridge.call(
            "install an engine", lambda c: c.install_engine(engine.value, request)
        )

    def follow(self, job_id: str) -> Follow:
        """Receives the InstallJob at each change, until it ends."""
        return self._bridge.follow("follow an install", lambda c: c.follow_install(job_id))

    def cancel(self, job_id: str) -> Call:
        return self._bridge.call("cancel an install", lambda c: c.cancel_install(job_id))

    def jobs(self) -> Call:
        """Answers with the InstallJobList: running ones and the last few ended."""
        return self._bridge.call("list installs", lambda c: c.install_jobs())

    def builds(self) -> Call:
        """Answers with the BuildList of llama.cpp."""
        return self._bridge.call("list llama.cpp builds", lambda c: c.llamacpp_builds())

    def use_build(self, tag: str) -> Call:
        return self._bridge.call(
            "switch llama.cpp builds",
            lambda c: c.switch_llamacpp_build(tag),
            lambda _: self._bridge.reload_engines(),
        )

    def remove_build(self, tag: str, *, force: bool = False) -> Call:
        """Answers with the BuildList left; `force` also removes the current build."""
        return self._bridge.call(
            "remove a llama.cpp build",
            lambda c: c.remove_llamacpp_build(tag, force=force),
            lambda _: self._bridge.reload_engines(),
        )

    def remove_venv(self, engine: EngineId) -> Call:
        return self._bridge.call(
            "remove an engine's environment",
            lambda c: c.remove_engine_venv(engine.value),
            lambda _: self._bridge.reload_engines(),
        )


class OllamaCalls:
    """The Ollama the daemon serves or attached to (`instance` picks one; None: the first)."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    def models(self, instance: str | None = None) -> Call:
        """Answers with the OllamaModelList."""
        return self._bridge.call("list Ollama's models", lambda c: c.ollama_models(instance))

    def loaded(self, instance: str | None = None) -> Call:
        """Answers with the OllamaLoadedList."""
        return self._bridge.call("list loaded models", lambda c: c.ollama_loaded(instance))

    def show(self, model: str, instance: str | None = None) -> Call:
        """Answers with the OllamaShownModel."""
        return self._bridge.call("show a model", lambda c: c.ollama_show(model, instance))

    def pull(self, model: str, instance: str | None = None) -> Follow:
        """Receives OllamaPullProgress lines; cancelling it stops the pull."""
        return self._bridge.follow("pull a model", lambda c: c.ollama_pull(model, instance))

    def load(self, request: OllamaLoadRequest, instance: str | None = None) -> Call:
        return self._bridge.call("load a model", lambda c: c.ollama_load(request, instance))

    def unload(self, model: str, instance: str | None = None) -> Call:
        return self._bridge.call("unload a model", lambda c: c.ollama_unload(model, instance))

    def delete(self, model: str, instance: str | None = None) -> Call:
        return self._bridge.call("delete a model", lambda c: c.ollama_delete(model, instance))


class SettingsCalls:
    """The daemon's settings, read. Saving goes through `settings_patch.patch_settings`,
    which applies a change onto the settings as they are at that moment."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    def get(self) -> Call:
        """Answers with the Settings in force."""
        return self._bridge.call("read the settings", lambda c: c.settings())


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
