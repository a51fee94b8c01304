"""The GUI's asyncio loop: qasync over Qt's, with the async-generator hooks asyncio sets."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import qasync
from PySide6.QtCore import QCoreApplication, QEventLoop

T = TypeVar("T")


class GuiEventLoop(qasync.QEventLoop):  # type: ignore[misc]
    """qasync's loop, whose `run_until_complete` handles Qt's last events as the running loop.

    WORKAROUND: qasync 0.28's run_until_complete processes Qt's pending events once more
    after run_forever has cleared asyncio's running loop. A task step that runs then (its
    timer fired, its socket became readable) fails with "no running event loop", and the
    task dies: the app's connection to the daemon did, in a test, after one page's scenario.
    Here that last pass runs with this loop set as asyncio's running loop.
    """

    def run_until_complete(self, future: Awaitable[T]) -> T:
        if self.is_running():
            raise RuntimeError("Event loop already running")
        task = asyncio.ensure_future(future, loop=self)

        def stop(_: object) -> None:
            self.stop()

        task.add_done_callback(stop)
        try:
            self.run_forever()
        finally:
            task.remove_done_callback(stop)
        asyncio.events._set_running_loop(self)
        try:
            QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents)
        finally:
            asyncio.events._set_running_loop(None)
        if not task.done():
            raise RuntimeError("Event loop stopped before Future completed.")
        return task.result()


def install_asyncgen_hooks(loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
    """Let `loop` finalize async generators, as asyncio's own loops do; returns the undo.

    WORKAROUND: qasync's run_forever (0.28) runs Qt's loop without asyncio's
    `sys.set_asyncgen_hooks(...)` (https://docs.python.org/3/library/sys.html#sys.set_asyncgen_hooks;
    compare BaseEventLoop.run_forever), so a generator a stream left suspended (httpx's line
    iterators, when an SSE stream ends early) is closed by the garbage collector with no loop
    running: "async generator ignored GeneratorExit". With the hooks the loop closes it, and
    `loop.shutdown_asyncgens()` has the generators to close.
    """
    base: Any = loop
    old = sys.get_asyncgen_hooks()
    sys.set_asyncgen_hooks(
        firstiter=base._asyncgen_firstiter_hook, finalizer=base._asyncgen_finalizer_hook
    )

    def restore() -> None:
        sys.set_asyncgen_hooks(*old)

    return restore
