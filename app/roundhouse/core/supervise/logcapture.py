"""An engine's output, line by line: a bounded ring in memory and a rotating file on disk."""

from __future__ import annotations

import logging
import logging.handlers
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

# One line longer than this is cut: a runaway engine must not grow our memory.
MAX_LINE_BYTES = 16 * 1024


class LogCapture:
    """Keeps the last `ring_lines` lines and appends every line to `path` (rotated)."""

    def __init__(
        self,
        path: Path,
        *,
        ring_lines: int = 500,
        max_bytes: int = 5 * 1024 * 1024,
        backups: int = 3,
        secrets: Iterable[str] = (),
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._ring: deque[str] = deque(maxlen=ring_lines)
        self._lock = threading.Lock()
        # Engines may echo their environment; secret values never reach the ring or disk.
        self._secrets = tuple(s for s in secrets if s)
        self._handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
        )
        # Lines come stamped already (`_stamped`): one record carries a whole burst.
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        self._closed = False
        # Lines ever added: the sequence number of the newest line, for followers.
        self._count = 0
        # Called after lines are added (from the pump's thread), so followers hear of them
        # without reading again on a clock; it must be cheap and thread-safe.
        self.on_lines: Callable[[], None] | None = None

    def add(self, line: str) -> None:
        self.add_lines([line])

    def add_lines(self, lines: list[str]) -> None:
        """Keep and write lines that came together: one write and one flush for them all
        (an engine writes several lines per request; the gateway's loop shares the GIL)."""
        if self._secrets:
            for secret in self._secrets:
                lines = [line.replace(secret, "***") for line in lines]
        if not lines:
            return
        with self._lock:
            if self._closed:
                return
            self._ring.extend(lines)
            self._count += len(lines)
            # A record without args is written as-is: a % in engine output is no format.
            record = logging.makeLogRecord({"msg": _stamped(lines), "levelno": logging.INFO})
            self._handler.handle(record)
        notify = self.on_lines
        if notify is not None:
            notify()

    def tail(self, lines: int = 20) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._ring)[-lines:] if lines > 0 else ()

    def since(self, seq: int, limit: int = 500) -> tuple[list[str], int, bool]:
        """Lines numbered after `seq` (at most `limit`, the oldest first), the number of the
        last one returned, and whether lines after `seq` already left the ring."""
        with self._lock:
            first_kept = self._count - len(self._ring)
            start = max(seq, first_kept)
            truncated = seq < first_kept
            lines = list(self._ring)[start - first_kept :][: max(limit, 0)]
            return lines, start + len(lines), truncated

    @property
    def count(self) -> int:
        with self._lock:
            return self._count

    def pump(self, stream: IO[bytes]) -> None:
        """Read `stream` to its end (blocking: run it in a thread), taking whatever lines
        have arrived at each read together."""
        read = getattr(stream, "read1", stream.read)
        pending = b""
        try:
            while chunk := read(READ_BYTES):
                pending += chunk
                *complete, pending = pending.split(b"\n")
                while len(pending) > MAX_LINE_BYTES:
                    # A line without end this long is cut, as readline(limit) would.
                    complete.append(pending[:MAX_LINE_BYTES])
                    pending = pending[MAX_LINE_BYTES:]
                if complete:
                    self.add_lines([_decoded(raw) for raw in complete])
            if pending:
                self.add_lines([_decoded(pending)])
        finally:
            stream.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._handler.close()


# What one read asks for: a burst of lines at once, never more than a pipe holds.
READ_BYTES = 64 * 1024


def _decoded(raw: bytes) -> str:
    if len(raw) > MAX_LINE_BYTES:
        raw = raw[:MAX_LINE_BYTES]
    return raw.decode("utf-8", errors="replace").rstrip("\r")


def _stamped(lines: list[str]) -> str:
    """Each line after the time it was read, in the logging module's default format."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now % 1 * 1000):03d}"
    return "\n".join(f"{stamp} {line}" for line in lines)
