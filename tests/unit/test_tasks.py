"""cancel_and_wait: the task ends, and the waiter's own cancellation is never swallowed."""

from __future__ import annotations

import asyncio

import pytest

from roundhouse.base.tasks import cancel_and_wait


async def _stubborn(started: asyncio.Event, release: asyncio.Event) -> None:
    """Ignores its first cancellation until released (cleanup that takes a while)."""
    started.set()
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        await release.wait()
        raise


def test_the_task_is_cancelled_and_finished() -> None:
    async def scenario() -> None:
        task = asyncio.ensure_future(asyncio.sleep(3600))
        await asyncio.sleep(0)
        await cancel_and_wait(task)
        assert task.done() and task.cancelled()

    asyncio.run(scenario())


def test_a_waiter_cancelled_meanwhile_is_cancelled_itself() -> None:
    """The bug this replaces: `with suppress(CancelledError): await task` in a task that is
    itself cancelled carries on, and a session told to end reconnects forever."""

    async def scenario() -> None:
        started, release = asyncio.Event(), asyncio.Event()
        slow = asyncio.ensure_future(_stubborn(started, release))
        await started.wait()
        carried_on: list[bool] = []

        async def waiter() -> None:
            await cancel_and_wait(slow)
            carried_on.append(True)

        waiting = asyncio.ensure_future(waiter())
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert carried_on == []
        release.set()
        await asyncio.wait({slow})
        assert slow.cancelled()

    asyncio.run(scenario())


def test_an_error_the_task_ended_with_is_raised_unless_told_not_to() -> None:
    async def failing(gate: asyncio.Event) -> None:
        try:
            await gate.wait()
        except asyncio.CancelledError:
            raise ValueError("cleanup failed") from None

    async def scenario() -> None:
        for reraise in (True, False):
            task = asyncio.ensure_future(failing(asyncio.Event()))
            await asyncio.sleep(0)
            if reraise:
                with pytest.raises(ValueError, match="cleanup failed"):
                    await cancel_and_wait(task)
            else:
                await cancel_and_wait(task, reraise=False)
            assert task.done()

    asyncio.run(scenario())
