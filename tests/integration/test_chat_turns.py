"""`POST /api/v1/chats/turns` through a real daemon and the real llama-server on the tiny GGUF:
a new conversation, an existing one, a turn stopped by the daemon and one whose client left
(each saved as far as it came, marked stopped), a turn not saved, refusals and failures."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import aclosing
from pathlib import Path

import pytest

from roundhouse.api.chat import (
    ChatDelta,
    Conversation,
    NewConversation,
    NewMessage,
    Role,
    SamplingParams,
    TurnEnded,
    TurnRequest,
    TurnStarted,
)
from roundhouse.client import ApiError, DaemonClient
from roundhouse.client.chat_stream import ChatFailed, take_turn
from tests.daemon_process import path_with
from tests.integration.test_chat_cli import Served, served
from tests.support.serving import llama_cpp, serving

__all__ = ["served"]  # the module's daemon and model, shared with the CLI's tests

HELLO = "Say hello."


@pytest.fixture(scope="module")
def long_served(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """A reply that runs for seconds: the stop tests must land while it streams. End-of-text
    ignored (the random model may sample it after a few tokens) and a context of 4096."""
    root = tmp_path_factory.mktemp("long") / "home"
    request = llama_cpp(
        tiny_gguf, ctx_size=4096, parallel=1, threads=1, extra_args=("--ignore-eos",)
    )
    with serving(root, request, env=path_with(llama_server_binary)) as (daemon, [info]):
        yield Served(daemon, root, info.models[0])


def _client(served: Served) -> DaemonClient:
    return DaemonClient(served.daemon.url, served.daemon.token)


async def _collect(
    client: DaemonClient, request: TurnRequest
) -> tuple[TurnStarted, list[ChatDelta], TurnEnded]:
    started: TurnStarted | None = None
    deltas: list[ChatDelta] = []
    async with aclosing(client.chat_turn(request)) as events:
        async for event in events:
            if isinstance(event, TurnStarted):
                assert started is None and not deltas, "started comes first, once"
                started = event
            elif isinstance(event, ChatDelta):
                deltas.append(event)
            else:
                assert started is not None
                return started, deltas, event
    raise AssertionError("no TurnEnded")


async def _saved_reply(client: DaemonClient, conversation_id: str, count: int) -> Conversation:
    """The conversation once it holds `count` messages (a turn whose client left is saved
    just after)."""
    deadline = time.monotonic() + 10
    while True:
        conversation = await client.chat(conversation_id)
        if len(conversation.messages) >= count or time.monotonic() > deadline:
            return conversation
        await asyncio.sleep(0.05)


def test_a_new_conversation_then_an_existing_one(served: Served) -> None:
    async def scenario() -> None:
        async with _client(served) as client:
            new = NewConversation(model=served.model, params=SamplingParams(max_tokens=16))
            started, deltas, ended = await _collect(client, TurnRequest(new=new, content=HELLO))
            conversation = started.conversation
            assert conversation is not None and started.model == served.model
            assert [(m.role, m.content) for m in conversation.messages] == [(Role.USER, HELLO)]
            # The reply's figures, measured by the daemon as it relays the reply.
            stats = ended.reply.stats
            assert stats is not None
            assert len(deltas) > 1 and "".join(d.content for d in deltas)
            assert stats.completion_tokens == 16 and stats.prompt_tokens
            assert stats.prompt_tokens > 0
            assert stats.ttft_ms is not None and stats.duration_s is not None
            assert 0 < stats.ttft_ms < stats.duration_s * 1000 < 30_000
            assert stats.tokens_per_s is not None and stats.tokens_per_s > 0
            assert stats.finish_reason == "length" and stats.model == served.model
            assert stats.engine == "llama.cpp" and stats.instance
            assert not stats.stopped and stats.error is None
            # Saved as streamed; titled from the first message, as every chat is.
            assert ended.message is not None and ended.not_saved is None
            assert ended.message.content == "".join(d.content for d in deltas)
            stored = await client.chat(conversation.id)
            assert stored.title == HELLO and stored.model == served.model
            assert [m.id for m in stored.messages][-1] == ended.message.id
            assert stored.messages[-1].stats == stats

            # The next turn of the same conversation: the engine is sent the whole of it.
            again = TurnRequest(conversation_id=conversation.id, content="And again.")
            started, _, ended = await _collect(client, again)
            assert started.conversation is not None
            assert len(started.conversation.messages) == 3
            assert ended.message is not None and ended.reply.stats is not None
            assert ended.reply.stats.prompt_tokens is not None
            assert stats.prompt_tokens is not None
            assert ended.reply.stats.prompt_tokens > stats.prompt_tokens
            stored = await client.chat(conversation.id)
            assert [m.role for m in stored.messages] == [Role.USER, Role.ASSISTANT] * 2

            # A regenerate: the last reply cut, the conversation answered as it stands.
            cut = TurnRequest(conversation_id=conversation.id, cut_from=ended.message.id)
            _, _, regenerated = await _collect(client, cut)
            assert regenerated.message is not None
            assert regenerated.message.id != ended.message.id
            stored = await client.chat(conversation.id)
            assert len(stored.messages) == 4
            assert stored.messages[-1].id == regenerated.message.id
            # The old reply is kept, a branch beside the new one.
            assert stored.messages[-1].sibling_ids == (ended.message.id, regenerated.message.id)
            assert stored.message_count == 5

            # An edit of the first message: a sibling of it, answered; the old branch kept.
            first = stored.messages[0]
            edit = TurnRequest(conversation_id=conversation.id, cut_from=first.id, content="Hi.")
            started, _, edited = await _collect(client, edit)
            assert started.conversation is not None
            assert [m.content for m in started.conversation.messages] == ["Hi."]
            assert edited.message is not None
            stored = await client.chat(conversation.id)
            assert [m.id for m in stored.messages][1:] == [edited.message.id]
            assert stored.messages[0].sibling_ids == (first.id, stored.messages[0].id)
            back = await client.switch_chat_branch(conversation.id, first.id)
            assert back.messages[-1].id == regenerated.message.id and len(back.messages) == 4

    asyncio.run(scenario())


def test_a_stopped_turn_is_saved_as_far_as_it_came(long_served: Served) -> None:
    served = long_served

    async def scenario() -> None:
        async with _client(served) as client:
            # The model's context ends it, seconds on: still streaming when the stop lands.
            new = NewConversation(model=served.model, params=SamplingParams(max_tokens=100_000))
            request = TurnRequest(new=new, content="Count to a thousand")
            seen = 0
            ended: TurnEnded | None = None
            async with aclosing(client.chat_turn(request)) as events:
                async for event in events:
                    if isinstance(event, TurnStarted):
                        turn_id = event.turn_id
                    elif isinstance(event, ChatDelta):
                        seen += 1
                        if seen == 3:
                            await client.stop_chat_turn(turn_id)
                    else:
                        ended = event
            assert ended is not None and ended.message is not None
            stats = ended.reply.stats
            assert stats is not None and stats.stopped and stats.error is None
            assert stats.completion_tokens is not None and 3 <= stats.completion_tokens < 2000
            assert stats.ttft_ms is not None
            assert ended.message.content == ended.reply.content and ended.reply.content
            # Stopped and ended, the turn is not found any more.
            with pytest.raises(ApiError, match="has ended"):
                await client.stop_chat_turn(turn_id)

    asyncio.run(scenario())


def test_a_turn_whose_client_left_is_saved_stopped_and_the_daemon_serves_on(
    long_served: Served,
) -> None:
    served = long_served

    async def scenario() -> None:
        async with _client(served) as client:
            new = NewConversation(model=served.model, params=SamplingParams(max_tokens=100_000))
            stream = client.chat_turn(TurnRequest(new=new, content=HELLO))
            conversation_id = None
            seen = 0
            async for event in stream:
                if isinstance(event, TurnStarted):
                    assert event.conversation is not None
                    conversation_id = event.conversation.id
                    continue
                assert isinstance(event, ChatDelta)
                seen += 1
                if seen == 3:
                    break
            started = time.perf_counter()
            await stream.aclose()
            assert time.perf_counter() - started < 1.0
            assert conversation_id is not None
            stored = await _saved_reply(client, conversation_id, 2)
            reply = stored.messages[-1]
            assert reply.role == Role.ASSISTANT and reply.stats is not None
            assert reply.stats.stopped and reply.stats.completion_tokens
            assert reply.stats.completion_tokens >= 3
            # The daemon and the engine serve the next turn as if nothing happened.
            assert (await client.status()).running
            short = TurnRequest(
                conversation_id=conversation_id,
                content="Briefly.",
                params=SamplingParams(max_tokens=4),
            )
            _, _, ended = await _collect(client, short)
            assert ended.reply.stats is not None and ended.reply.stats.completion_tokens == 4
            # An unknown model fails in words, saved marked failed.
            unknown = TurnRequest(new=NewConversation(model="no-such-model"), content=HELLO)
            with pytest.raises(ChatFailed, match="no-such-model") as failed:
                await take_turn(client, unknown, lambda _delta: None)
            kept = failed.value.ended
            assert kept is not None and kept.message is not None
            assert kept.message.stats is not None and kept.message.stats.error

    asyncio.run(scenario())


def test_an_unsaved_turn_and_refusals(served: Served) -> None:
    async def scenario() -> None:
        async with _client(served) as client:
            before = len((await client.chats()).conversations)
            history = [
                NewMessage(role=Role.USER, content="My name is Ada."),
                NewMessage(role=Role.ASSISTANT, content="Hello, Ada."),
            ]
            request = TurnRequest(
                save=False,
                model=served.model,
                params=SamplingParams(max_tokens=4),
                history=history,
                content="What is my name?",
            )
            started, deltas, ended = await _collect(client, request)
            assert started.conversation is None and ended.message is None
            assert deltas and ended.reply.stats is not None
            assert ended.reply.stats.completion_tokens == 4
            assert len((await client.chats()).conversations) == before
            # Refused before anything streams, in words.
            with pytest.raises(ApiError, match="No conversation no-such-chat"):
                await _collect(client, TurnRequest(conversation_id="no-such-chat", content="x"))
            with pytest.raises(ApiError, match="Choose a model"):
                await _collect(client, TurnRequest(content="x"))
            with pytest.raises(ApiError, match="user's message"):
                await _collect(client, TurnRequest(save=False, model=served.model))
            with pytest.raises(ApiError, match="has ended"):
                await client.stop_chat_turn("no-such-turn")

    asyncio.run(scenario())
