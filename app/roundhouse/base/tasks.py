"""Cancelling a task and waiting for it without swallowing the waiter's own cancellation."""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel_and_wait(task: asyncio.Future[Any], *, reraise: bool = True) -> None:
    """Cancel `task` and return once it has finished.

    `task.cancel(); with suppress(CancelledError): await task` looks the same but also
    swallows a cancellation of the *waiting* task, which then carries on as if nothing
    happened (a session told to end that reconnects forever). Here the waiter's own
    cancellation propagates, and the task's is absorbed. An exception the task ended with
    instead is raised when `reraise` (as awaiting it would), else only marked as retrieved.
    """
    task.cancel()
    await asyncio.wait({task})
    if task.cancelled():
        return
    error = task.exception()
    if error is not None and reraise:
        raise error
