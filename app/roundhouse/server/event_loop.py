"""Run the daemon's event loop on uvloop where it exists, else on asyncio's own."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """uvloop halves the loop's own cost per relayed event (ADR 0002): the gateway relays
    thousands of events a second on the same cores the engine computes on. Windows has no
    uvloop, and a missing wheel must not stop the daemon, so asyncio's loop is the fallback."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)
