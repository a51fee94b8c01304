"""Cancelling a task and waiting for it without swallowing the waiter's own cancellation."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

# A cancellation can be lost inside a library (a timeout scope that takes it for its own
# as both fire together): until the task ends it is cancelled again this often.
RECANCEL_S = 1.0


async def cancel_and_wait(
    task: asyncio.Future[Any], *, reraise: bool = True, give_up_s: float | None = None
) -> None:
    """Cancel `task` and return once it has finished.

    `task.cancel(); with suppress(CancelledError): await task` looks the same but also
    swallows a cancellation of the *waiting* task, which then carries on as if nothing
    happened (a session told to end that reconnects forever). Here the waiter's own
    cancellation propagates, and the task's is absorbed. A task still running after
    RECANCEL_S is cancelled again. With `give_up_s`, a task that outlives it is left
    behind (logged), so a shutdown cannot hang on it. An exception the task ended with
    instead is raised when `reraise` (as awaiting it would), else only marked as retrieved.
    """
    deadline = None if give_up_s is None else time.monotonic() + give_up_s
    while not task.done():
        if deadline is not None and time.monotonic() >= deadline:
            log.warning(
                "%r did not end %.0f s after it was cancelled; left behind", task, give_up_s
            )
            return
        task.cancel()
        wait_s = RECANCEL_S if deadline is None else min(RECANCEL_S, deadline - time.monotonic())
        await asyncio.wait({task}, timeout=max(wait_s, 0.0))
    if task.cancelled():
        return
    error = task.exception()
    if error is not None and reraise:
        raise error


async def run_every(interval_s: float, step: Callable[[], Awaitable[object]]) -> None:
    """Await `step` every `interval_s` seconds until cancelled, on a fixed grid so slow
    steps do not drift the rate; a step that overruns its slot starts the grid again."""
    loop = asyncio.get_running_loop()
    next_tick = loop.time()
    while True:
        await step()
        next_tick += interval_s
        delay = next_tick - loop.time()
        if delay < 0:
            next_tick = loop.time()
            delay = 0
        await asyncio.sleep(delay)
