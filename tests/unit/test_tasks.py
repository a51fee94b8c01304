"""cancel_and_wait: the task ends, and the waiter's own cancellation is never swallowed;
run_every: a fixed grid that slow steps do not drift."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from roundhouse.base.tasks import cancel_and_wait, run_every


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


def test_a_lost_cancellation_is_sent_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A library that takes one cancellation for its own (a timeout firing at the same
    moment) and goes on waiting: the next cancellation ends it."""
    monkeypatch.setattr("roundhouse.base.tasks.RECANCEL_S", 0.05)

    async def swallows_once() -> None:
        # Lost, as inside such a library.
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(3600)
        await asyncio.sleep(3600)

    async def scenario() -> None:
        task = asyncio.ensure_future(swallows_once())
        await asyncio.sleep(0)
        await asyncio.wait_for(cancel_and_wait(task), 5)
        assert task.cancelled()

    asyncio.run(scenario())


def test_a_task_that_never_ends_is_left_behind_after_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("roundhouse.base.tasks.RECANCEL_S", 0.05)

    async def immortal(stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(3600)

    async def scenario() -> None:
        stop = asyncio.Event()
        task = asyncio.ensure_future(immortal(stop))
        await asyncio.sleep(0)
        await asyncio.wait_for(cancel_and_wait(task, give_up_s=0.3), 5)
        assert not task.done()
        stop.set()
        task.cancel()
        await asyncio.wait({task})

    asyncio.run(scenario())


def test_run_every_keeps_a_fixed_grid_and_restarts_it_after_an_overrun() -> None:
    async def scenario() -> list[float]:
        loop = asyncio.get_running_loop()
        starts: list[float] = []

        async def step() -> None:
            starts.append(loop.time())
            # Each step takes part of its slot; the third overruns it.
            await asyncio.sleep(0.4 if len(starts) == 3 else 0.15)
            if len(starts) == 5:
                raise asyncio.CancelledError

        with contextlib.suppress(asyncio.CancelledError):
            await run_every(0.3, step)
        return [t - starts[0] for t in starts]

    offsets = asyncio.run(scenario())
    # On the grid, the step's own time not added (a loop that slept after each step would
    # give 0.45 s apart); the margins are a loaded machine's late wake-ups.
    assert 0.3 <= offsets[1] < 0.4
    assert 0.6 <= offsets[2] < 0.7
    # The overrun (0.6 + 0.4) starts the next at once, and the grid again from there.
    assert 1.0 <= offsets[3] < 1.1
    assert 0.3 <= offsets[4] - offsets[3] < 0.4
