"""Per-instance admission: a few requests forwarded at once, a bounded queue behind them."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from roundhouse.core.gateway.errors import QueueFull, QueueTimeout
from roundhouse.core.infra.changes import Changes

# What a client is told to wait before it tries again after a 429.
RETRY_AFTER_S = 1


@dataclass
class _Lane:
    in_flight: int = 0
    waiters: deque[asyncio.Future[None]] = field(default_factory=deque)
    # Requests waiting for the instance itself to be ready (a just-in-time start).
    pending: int = 0
    last_used: float | None = None

    @property
    def idle(self) -> bool:
        return self.in_flight == 0 and not self.waiters and self.pending == 0


class Lease:
    """One forwarded request's slot; released once, whatever ends the reply."""

    def __init__(self, scheduler: Scheduler, instance_id: str) -> None:
        self._scheduler = scheduler
        self.instance_id = instance_id
        self._released = False

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._scheduler.release(self.instance_id)


class Scheduler:
    """Slots and queues per instance id, and when each was last used.

    `max_concurrent` is read at each decision: a changed setting counts at once."""

    def __init__(
        self, max_concurrent: Callable[[], int], clock: Callable[[], float] = time.time
    ) -> None:
        self._max_concurrent = max_concurrent
        self.clock = clock
        self._lanes: dict[str, _Lane] = {}
        self._changes = Changes()

    async def acquire(self, instance_id: str, *, queue_size: int, deadline: float) -> Lease:
        """A slot on the instance now, or after waiting in its queue until `deadline`.

        Raises QueueFull when the queue holds `queue_size` already, QueueTimeout when the
        deadline passes first."""
        lane = self._lanes.setdefault(instance_id, _Lane())
        lane.last_used = self.clock()
        self._wake(lane)
        if lane.in_flight < self._max_concurrent() and not lane.waiters:
            lane.in_flight += 1
            return Lease(self, instance_id)
        if len(lane.waiters) >= queue_size:
            raise QueueFull(
                f"The instance {instance_id} is busy: {lane.in_flight} requests are being "
                f"answered and {len(lane.waiters)} wait, the most its queue holds "
                "(gateway settings max_concurrent and queue_size). Retry shortly.",
                headers={"retry-after": str(RETRY_AFTER_S)},
            )
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        lane.waiters.append(turn)
        try:
            done, _ = await asyncio.wait({turn}, timeout=max(0.0, deadline - self.clock()))
        except asyncio.CancelledError:
            self._abandon(instance_id, lane, turn)
            raise
        if not done:
            self._abandon(instance_id, lane, turn)
            raise QueueTimeout(
                f"The request waited its turn on instance {instance_id} for the longest the "
                "gateway allows (setting queue_timeout_s) while it answered others. Retry "
                "later, or raise max_concurrent if the engine has parallel slots to spare."
            )
        return Lease(self, instance_id)

    def _abandon(self, instance_id: str, lane: _Lane, turn: asyncio.Future[None]) -> None:
        if turn.done() and not turn.cancelled():
            # Handed a slot just as it gave up: pass the slot on.
            self.release(instance_id)
            return
        turn.cancel()
        with contextlib.suppress(ValueError):
            lane.waiters.remove(turn)
        self._notify()

    def release(self, instance_id: str) -> None:
        lane = self._lanes.get(instance_id)
        if lane is None:
            return
        lane.in_flight = max(0, lane.in_flight - 1)
        lane.last_used = self.clock()
        self._wake(lane)
        self._notify()

    def _wake(self, lane: _Lane) -> None:
        # A slot goes straight to the first waiter, so no newcomer overtakes the queue.
        while lane.waiters and lane.in_flight < self._max_concurrent():
            turn = lane.waiters.popleft()
            if turn.done():
                continue
            turn.set_result(None)
            lane.in_flight += 1

    @contextlib.contextmanager
    def pending(self, instance_id: str) -> Iterator[None]:
        """Count a request waiting for the instance to be ready: it is not idle then."""
        lane = self._lanes.setdefault(instance_id, _Lane())
        lane.pending += 1
        try:
            yield
        finally:
            lane.pending -= 1
            self._notify()

    def _notify(self) -> None:
        self._changes.touch()

    async def wait_change(self, within_s: float) -> None:
        """Until a slot is released or a waiter leaves, or `within_s` seconds."""
        await self._changes.wait(self._changes.version, within_s)

    def touch(self, instance_id: str) -> None:
        self._lanes.setdefault(instance_id, _Lane()).last_used = self.clock()

    def idle(self, instance_id: str) -> bool:
        lane = self._lanes.get(instance_id)
        return lane is None or lane.idle

    def in_flight(self, instance_id: str) -> int:
        lane = self._lanes.get(instance_id)
        return lane.in_flight if lane else 0

    def queued(self, instance_id: str) -> int:
        lane = self._lanes.get(instance_id)
        return len(lane.waiters) + lane.pending if lane else 0

    def last_used(self, instance_id: str) -> float | None:
        lane = self._lanes.get(instance_id)
        return lane.last_used if lane else None

    def forget_except(self, instance_ids: set[str]) -> None:
        """Drop the idle lanes of instances that are gone."""
        for gone in [i for i, lane in self._lanes.items() if i not in instance_ids and lane.idle]:
            del self._lanes[gone]
