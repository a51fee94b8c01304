"""What a transfer reports, applied to its queue entry: live bytes, durable bytes, retries."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from roundhouse.core.infra.transfer.fetch import Clock
from roundhouse.core.models.downloads.views import Live


class EntryHooks:
    """Live progress stays in memory (and wakes followers); durable progress is saved."""

    def __init__(
        self,
        live: Live,
        *,
        monotonic: Clock,
        touch: Callable[[], None],
        save: Callable[[Live], Awaitable[None]],
    ) -> None:
        self._live = live
        self._monotonic = monotonic
        self._touch = touch
        self._save = save

    def attempt_started(self, offset: int) -> None:
        live = self._live
        live.received = offset
        live.rate.reset(self._monotonic(), offset)
        live.retrying = False
        live.entry.error = None
        self._touch()

    def received(self, received: int) -> None:
        self._live.received = received

    def progress(self, received: int) -> None:
        live = self._live
        live.received = received
        live.rate.add(self._monotonic(), received)
        self._touch()

    async def checkpoint(self, durable: int, validator: str | None) -> None:
        entry = self._live.entry
        entry.bytes_done = durable
        entry.validator = validator
        await self._save(self._live)

    def retrying(self, reason: str, delay_s: float) -> None:
        live = self._live
        live.retrying = True
        live.entry.error = f"Retrying in {delay_s:g} s: {reason}."
        self._touch()
