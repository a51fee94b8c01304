"""The change feed's call of the daemon client (mixed into DaemonClient)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import httpx

from roundhouse.api.events import EventKind, FeedEvent, parse_event

_KINDS = tuple(str(kind) for kind in EventKind)
# The daemon sends a keep-alive comment every 15 s of quiet: three missed mean the
# connection is dead (a machine asleep, a cable pulled), not that nothing happens.
_TIMEOUT = httpx.Timeout(10.0, connect=2.0, read=45.0)


class EventsMixin:
    """`GET /api/v1/events`: one stream of every change the daemon makes."""

    if TYPE_CHECKING:
        # Provided by DaemonClient.
        def _stream(
            self, path: str, event_names: tuple[str, ...], *, method: str = "GET", **kwargs: Any
        ) -> AsyncGenerator[tuple[str, str], None]: ...

    async def events(self, since: int | None = None) -> AsyncGenerator[FeedEvent, None]:
        """Every event after `since` (the `seq` of the last one the caller applied), until
        the daemon stops; without `since`, or when the daemon no longer keeps the events
        after it, a ResetEvent first (load the state again). To resume after a broken
        stream (DaemonUnreachableError, also after 45 s without a byte), call again with
        the last event's `seq`."""
        params = {"since": str(since)} if since is not None else {}
        async with aclosing(
            self._stream("/events", _KINDS, params=params, timeout=_TIMEOUT)
        ) as stream:
            async for _, data in stream:
                yield parse_event(data)
