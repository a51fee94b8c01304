"""The GUI's asyncio loop: qasync over Qt's, with the async-generator hooks asyncio sets."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any


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
