"""The GUI's loop: a task lives through many run_until_complete calls (qasync's own loop
runs Qt's pending events once more with no running loop, and such a task dies there)."""

from __future__ import annotations

import asyncio

from PySide6.QtWidgets import QApplication

from roundhouse.gui.event_loop import GuiEventLoop


def test_a_background_task_survives_the_ends_of_runs(qapp: QApplication) -> None:
    loop = GuiEventLoop(qapp)
    asyncio.set_event_loop(loop)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            # A sleep needs the running loop: a step run without one raises here.
            await asyncio.sleep(0.0005)
            ticks += 1

    try:
        task = loop.create_task(ticker())
        for _ in range(200):
            assert loop.run_until_complete(asyncio.sleep(0.001, result="done")) == "done"
            assert not task.done(), task.exception()
        assert ticks > 0
        task.cancel()
        loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
    finally:
        asyncio.set_event_loop(None)
        loop.close()
