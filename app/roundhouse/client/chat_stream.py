"""A chat turn taken to its end on the client (Qt-free: `roundhouse chat` and `roundhouse setup`
use it; the app follows `DaemonClient.chat_turn` through its bridge)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import aclosing, suppress
from typing import TYPE_CHECKING

from roundhouse.api.chat import ChatDelta, TurnEnded, TurnRequest, TurnStarted
from roundhouse.client.errors import ClientError

if TYPE_CHECKING:
    from roundhouse.client.client import DaemonClient

__all__ = ["ChatDelta", "ChatFailed", "take_turn"]

ENDED_EARLY = "The daemon ended the reply's stream before the reply was complete; try again."


class ChatFailed(Exception):
    """The reply failed: `message` is the words for the user; `ended` the turn as it ended
    (the failed reply with its figures, saved), when the daemon said so."""

    def __init__(self, message: str, ended: TurnEnded | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.ended = ended


async def take_turn(
    client: DaemonClient,
    request: TurnRequest,
    on_delta: Callable[[ChatDelta], None],
    on_started: Callable[[TurnStarted], None] | None = None,
) -> TurnEnded:
    """Run one turn, each piece of the reply handed to `on_delta` as it comes; the turn as it
    ended. A failed reply raises ChatFailed (it is saved all the same).

    Cancelled while the reply streams (Ctrl-C), it asks the daemon to stop the reply and
    returns the turn as it ended, stopped and saved; cancelled before, it stays cancelled.
    """
    started: list[TurnStarted] = []

    async def read() -> TurnEnded:
        async with aclosing(client.chat_turn(request)) as events:
            async for event in events:
                if isinstance(event, ChatDelta):
                    on_delta(event)
                elif isinstance(event, TurnStarted):
                    started.append(event)
                    if on_started is not None:
                        on_started(event)
                else:
                    return event
        raise ChatFailed(ENDED_EARLY)

    reader = asyncio.ensure_future(read())
    try:
        ended = await asyncio.shield(reader)
    except asyncio.CancelledError:
        if not reader.done():
            if not started:
                reader.cancel()
                raise
            with suppress(ClientError):
                # Ended meanwhile, the turn is not found: its end is on the way anyway.
                await client.stop_chat_turn(started[0].turn_id)
        ended = await reader
    error = ended.reply.stats.error if ended.reply.stats else None
    if error:
        raise ChatFailed(error, ended)
    return ended
