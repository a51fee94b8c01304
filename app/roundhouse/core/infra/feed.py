"""The change feed: a bounded, sequenced log of typed changes that followers resume from.

Each event carries the whole new state of its kind (a topic: instances, jobs, settings...),
so the log needs no history beyond a window: a follower whose resume point fell out of it
is told to reset (load every kind again) and goes on from the newest event. Followers hold
a cursor into the shared ring, never a queue of their own, so a slow one costs no memory.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from pydantic import BaseModel

from roundhouse.core.infra.changes import Changes, any_change

log = logging.getLogger(__name__)

# Enough for every kind to change many times between two reads of a follower that is
# merely busy; one that falls further behind reloads, which costs a few GETs.
CAPACITY = 512
# How long a follower waits for the next event before looking again (nothing is sent then:
# the SSE route's keep-alive comments are the heartbeat).
IDLE_WAIT_S = 30.0
# Publishers of fast-moving state (downloads' bytes, loading progress) publish at most this
# often; the feed's followers see the latest state, not every step.
MIN_INTERVAL_S = 0.25

Clock = Callable[[], float]


class ResetReason(StrEnum):
    """Why a follower must load every kind again (the same words as api.events')."""

    NEW = "new"
    BEHIND = "behind"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Published:
    """One event of the log: its place, when, its kind and the kind's whole state."""

    seq: int
    at: float
    kind: str
    data: BaseModel

    @cached_property
    def json(self) -> str:
        """The event as api.events reads it, encoded once for every follower."""
        return (
            f'{{"seq":{self.seq},"at":{self.at!r},"kind":{json.dumps(self.kind)},'
            f'"data":{self.data.model_dump_json()}}}'
        )


@dataclass(frozen=True)
class Reset:
    """Load every kind again; the events after `seq` follow."""

    seq: int
    at: float
    reason: ResetReason
    oldest: int
    kind: str = "reset"

    @property
    def json(self) -> str:
        return (
            f'{{"seq":{self.seq},"at":{self.at!r},"kind":"reset",'
            f'"reason":"{self.reason}","oldest":{self.oldest}}}'
        )


FeedItem = Published | Reset


class Feed:
    """The daemon's change feed. Sequence numbers start from the clock in milliseconds, so
    a resume point from an earlier run of the daemon reads as unknown, never as one of
    this run's events."""

    def __init__(
        self,
        capacity: int = CAPACITY,
        *,
        clock: Clock = time.time,
        first_seq: int | None = None,
    ) -> None:
        self._clock = clock
        self._ring: deque[Published] = deque(maxlen=capacity)
        # The seq of the newest event; the first published gets base + 1.
        self._base = int(clock() * 1000) if first_seq is None else first_seq - 1
        self.head = self._base
        self._latest: dict[str, BaseModel] = {}
        self.changes = Changes()

    @property
    def oldest(self) -> int:
        """The seq of the oldest event kept (head + 1 while none is)."""
        return self._ring[0].seq if self._ring else self.head + 1

    def latest(self, kind: str) -> BaseModel | None:
        """The state of `kind` as last published."""
        return self._latest.get(kind)

    def publish(self, kind: str, data: BaseModel) -> Published | None:
        """Append the new state of `kind`; None (nothing appended) when it equals the state
        last published for that kind, so publishers may publish whenever they might have
        changed something."""
        if self._latest.get(kind) == data:
            return None
        self.head += 1
        item = Published(self.head, self._clock(), kind, data)
        self._ring.append(item)
        self._latest[kind] = data
        self.changes.touch()
        return item

    def _reset(self, reason: ResetReason) -> Reset:
        return Reset(self.head, self._clock(), reason, self.oldest)

    def _after(self, seq: int) -> list[Published] | ResetReason:
        """The events after `seq`, or why a follower at `seq` cannot resume."""
        if seq > self.head or seq < self._base:
            return ResetReason.UNKNOWN
        if seq + 1 < self.oldest:
            return ResetReason.BEHIND
        # Sequence numbers in the ring are consecutive: the index is an offset.
        return list(itertools.islice(self._ring, seq + 1 - self.oldest, None))

    async def follow(
        self, since: int | None = None, *, idle_wait_s: float = IDLE_WAIT_S
    ) -> AsyncGenerator[FeedItem, None]:
        """The events after `since`, then each new one, for ever; a Reset first when there
        is no `since` or the feed cannot resume from it, and again whenever the follower
        falls out of the window while it reads."""
        if since is None:
            cursor = self.head
            yield self._reset(ResetReason.NEW)
        else:
            cursor = since
        while True:
            seen = self.changes.version
            found = self._after(cursor)
            if isinstance(found, ResetReason):
                reset = self._reset(found)
                cursor = reset.seq
                yield reset
                continue
            for item in found:
                # A follower that reads slower than the feed moves its cursor only: the
                # events it holds here are at most one ring's worth.
                cursor = item.seq
                yield item
            if not found:
                await self.changes.wait(seen, idle_wait_s)


Snapshot = Callable[[], Awaitable[BaseModel | None]]


async def relay(
    feed: Feed,
    kind: str,
    snapshot: Snapshot,
    sources: Sequence[Changes],
    *,
    min_interval_s: float = MIN_INTERVAL_S,
) -> None:
    """Publish `snapshot()` as `kind` now and after each change of any source, at most
    every `min_interval_s`, until cancelled (the feed leaves out a state equal to the
    last). A snapshot that fails is logged and tried again at the next change: one kind's
    bug must not stop the feed."""
    seen = [source.version for source in sources]
    while True:
        try:
            state = await snapshot()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("The change feed could not read the state of %s", kind)
        else:
            if state is not None:
                feed.publish(kind, state)
        await asyncio.sleep(min_interval_s)
        # Read again only after a change: a state that moves with time alone (memory in
        # use) is not published while nothing happens.
        while (now := await any_change(sources, seen, IDLE_WAIT_S)) == seen:
            pass
        seen = now
