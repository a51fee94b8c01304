"""A change counter touched from another thread (an engine's output pump), heard on the loop."""

from __future__ import annotations

import asyncio
import contextlib

from roundhouse.core.infra.changes import Changes


class ThreadTouch:
    """Touches `changes` from any thread (an engine's output pump): the touch runs on the
    loop, and a burst of calls before it runs costs the loop one callback."""

    def __init__(self, changes: Changes, loop: asyncio.AbstractEventLoop) -> None:
        self._changes = changes
        self._loop = loop
        self._pending = False

    def __call__(self) -> None:
        # The caller's change is made before this check: a touch still pending runs after
        # it, so a follower woken by that touch sees it.
        if self._pending:
            return
        self._pending = True
        # The loop may be gone when the daemon stopped first; nothing waits then.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._touch)

    def _touch(self) -> None:
        self._pending = False
        self._changes.touch()
