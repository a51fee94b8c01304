"""Two (or more) models on the same prompt at once: each a daemon turn that keeps nothing
(Qt-free: `roundhouse compare` runs it; the app's Compare window builds the same requests)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roundhouse.api.chat import ChatDelta, ReplyStats, SamplingParams, TurnRequest
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
