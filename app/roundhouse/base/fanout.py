"""Live values handed to every subscriber, each with a bounded backlog (drop-oldest)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Generic, TypeVar

T = TypeVar("T")

# A subscriber that falls this many values behind loses the oldest: a live view wants the
# newest reading, and the daemon must not grow memory for a stalled client.
SUBSCRIBER_BACKLOG = 32


class Fanout(Generic[T]):
    """`publish` never blocks; `subscribe` yields what is published after it started."""

    def __init__(self, backlog: int = SUBSCRIBER_BACKLOG) -> None:
        self._backlog = backlog
        self._queues: set[asyncio.Queue[T]] = set()

    def __len__(self) -> int:
        return len(self._queues)

    def publish(self, value: T) -> None:
        for queue in self._queues:
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(value)

    async def subscribe(self) -> AsyncIterator[T]:
        """Each value published from now until the caller stops iterating."""
        queue: asyncio.Queue[T] = asyncio.Queue(maxsize=self._backlog)
        self._queues.add(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._queues.discard(queue)
