"""A change counter that followers wait on: jobs, downloads, the scheduler and the change feed."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence


class Changes:
    """Producers `touch()`; a follower remembers the version it saw and waits for a newer
    one, so no change falls between two waits."""

    def __init__(self) -> None:
        self.version = 0
        self._event = asyncio.Event()

    def touch(self) -> None:
        self.version += 1
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self, seen: int, timeout_s: float) -> int:
        """The version once it differs from `seen`, or after `timeout_s` regardless."""
        if self.version == seen:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), timeout_s)
        return self.version


async def any_change(sources: Sequence[Changes], seen: list[int], timeout_s: float) -> list[int]:
    """The sources' versions once any differs from `seen` (or after `timeout_s`)."""
    if any(source.version != version for source, version in zip(sources, seen, strict=True)):
        return [source.version for source in sources]
    waits = [
        asyncio.ensure_future(source.wait(version, timeout_s))
        for source, version in zip(sources, seen, strict=True)
    ]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
    return [source.version for source in sources]
