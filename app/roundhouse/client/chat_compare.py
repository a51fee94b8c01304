"""Two (or more) models on the same prompt at once: each a daemon turn that keeps nothing
(Qt-free: `roundhouse compare` runs it; the app's Compare window builds the same requests),
and, when asked, each exchange kept afterwards as a conversation of its own."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roundhouse.api.chat import (
    ChatDelta,
    NewConversation,
    NewMessage,
    ReplyStats,
    Role,
    SamplingParams,
    TurnRequest,
)
from roundhouse.client.chat_stream import ChatFailed, take_turn
from roundhouse.client.errors import ClientError

if TYPE_CHECKING:
    from roundhouse.client.client import DaemonClient


@dataclass(frozen=True)
class ComparedReply:
    """One model's answer: its text and figures, or why it failed (in words)."""

    model: str
    content: str
    reasoning: str
    stats: ReplyStats
    error: str | None = None

    def as_message(self) -> NewMessage:
        """The reply as the history keeps it (a failed one with its error in its figures)."""
        stats = self.stats
        if self.error and not stats.error:
            stats = stats.model_copy(update={"error": self.error})
        return NewMessage(
            role=Role.ASSISTANT,
            content=self.content,
            reasoning=self.reasoning or None,
            stats=stats,
        )


def kept_conversation(
    prompt: str,
    model: str,
    reply: NewMessage,
    system_prompt: str = "",
    params: SamplingParams | None = None,
) -> NewConversation:
    """One side of a compare as a conversation of its own: the prompt and that model's reply
    with its figures, titled so the two are told apart in the list."""
    first_line = prompt.strip().split("\n", 1)[0]
    title = f"{first_line[:120]} ({model})"[:200]
    return NewConversation(
        title=title,
        model=model,
        system_prompt=system_prompt,
        params=params or SamplingParams(),
        messages=[NewMessage(role=Role.USER, content=prompt), reply],
    )


def compare_request(
    model: str, prompt: str, system_prompt: str = "", params: SamplingParams | None = None
) -> TurnRequest:
    """The turn one side of a compare runs: `prompt` alone, sent to `model`, kept nowhere
    (a compare is a measurement, not a conversation)."""
    return TurnRequest(
        save=False,
        model=model,
        system_prompt=system_prompt,
        params=params or SamplingParams(),
        content=prompt,
    )


async def compare(
    client: DaemonClient,
    models: list[str],
    prompt: str,
    system_prompt: str = "",
    params: SamplingParams | None = None,
) -> list[ComparedReply]:
    """Each model's reply to `prompt`, all asked at once; in the order of `models`. A model
    that fails (not served, the engine refused) comes back with its error, never raises."""

    async def one(model: str) -> ComparedReply:
        parts: list[str] = []
        thoughts: list[str] = []

        def add(delta: ChatDelta) -> None:
            parts.append(delta.content)
            thoughts.append(delta.reasoning)

        request = compare_request(model, prompt, system_prompt, params)
        try:
            ended = await take_turn(client, request, add)
        except ChatFailed as exc:
            stats = exc.ended.reply.stats if exc.ended and exc.ended.reply.stats else None
            return ComparedReply(
                model,
                "".join(parts),
                "".join(thoughts),
                stats or ReplyStats(model=model),
                exc.message,
            )
        except ClientError as exc:
            return ComparedReply(model, "", "", ReplyStats(model=model), str(exc))
        reply = ended.reply
        return ComparedReply(
            model, reply.content, reply.reasoning or "", reply.stats or ReplyStats(model=model)
        )

    return list(await asyncio.gather(*(one(model) for model in models)))
