"""Blocking work (hashing, extracting) in a thread that stops when its task is cancelled."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Stopped(Exception):
    """Raised inside the thread once the awaiting task was cancelled."""


async def run_stoppable(work: Callable[[threading.Event], T]) -> T:
    """Run `work(stop)` in a thread; on cancellation set `stop` and wait for it to notice.

    asyncio.to_thread alone would leave the thread running after a cancel, still writing
    into a folder the next attempt may be clearing.
    """
    stop = threading.Event()
    task = asyncio.ensure_future(asyncio.to_thread(work, stop))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        stop.set()
        with contextlib.suppress(Stopped, OSError):
            await task
        raise


def check(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise Stopped
