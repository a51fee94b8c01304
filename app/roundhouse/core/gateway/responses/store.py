"""The conversations behind `previous_response_id`, kept by the daemon for engines that keep
none: each response's input and output items, for a bounded time, count and size."""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

# An hour, as a coding agent's session between turns; older ones are sent whole again.
TTL_S = 3600.0
MAX_ENTRIES = 1000
# Conversations repeat their history in each entry: the bytes bound what that costs.
MAX_BYTES = 256 * 1024 * 1024


class ResponseStore:
    """Least recently used first out, past `max_entries` or `max_bytes` (JSON size), and
    none older than `ttl_s`. One per daemon; only the event loop's thread uses it."""

    def __init__(
        self,
        *,
        ttl_s: float = TTL_S,
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._clock = clock
        # id -> (when stored, size, the items as JSON), least recently used first
        self._entries: OrderedDict[str, tuple[float, int, bytes]] = OrderedDict()
        # id -> when stored, oldest first: expiry looks at the front only, not at every entry
        # on every request.
        self._stored: OrderedDict[str, float] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        return self._bytes

    def put(self, response_id: str, items: list[dict[str, Any]]) -> None:
        """Keep the conversation up to and with `response_id`'s output; one larger than the
        whole store is not kept (a later request naming it is told so)."""
        raw = json.dumps(items, ensure_ascii=False).encode()
        self._drop(response_id)
        if len(raw) > self.max_bytes:
            return
        now = self._clock()
        self._entries[response_id] = (now, len(raw), raw)
        self._stored[response_id] = now
        self._bytes += len(raw)
        self._expire()
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            self._drop(next(iter(self._entries)))

    def get(self, response_id: str) -> list[dict[str, Any]] | None:
        """The conversation's items (a fresh copy), None when unknown or expired."""
        self._expire()
        entry = self._entries.get(response_id)
        if entry is None:
            return None
        self._entries.move_to_end(response_id)
        items: list[dict[str, Any]] = json.loads(entry[2])
        return items

    def _expire(self) -> None:
        oldest_kept = self._clock() - self.ttl_s
        while self._stored:
            rid, at = next(iter(self._stored.items()))
            if at >= oldest_kept:
                break
            self._drop(rid)

    def _drop(self, response_id: str) -> None:
        entry = self._entries.pop(response_id, None)
        self._stored.pop(response_id, None)
        if entry is not None:
            self._bytes -= entry[1]
