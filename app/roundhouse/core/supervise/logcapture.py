"""An engine's output, line by line: a bounded ring in memory and a rotating file on disk."""

from __future__ import annotations

import logging
import logging.handlers
import threading
from collections import deque
from collections.abc import Iterable
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
        self._handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        self._closed = False
        # Lines ever added: the sequence number of the newest line, for followers.
        self._count = 0

    def add(self, line: str) -> None:
        for secret in self._secrets:
            line = line.replace(secret, "***")
        with self._lock:
            if self._closed:
                return
            self._ring.append(line)
            self._count += 1
            # A record without args is written as-is: a % in engine output is no format.
            self._handler.handle(logging.makeLogRecord({"msg": line, "levelno": logging.INFO}))

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
        """Read `stream` to its end (blocking: run it in a thread), one line at a time."""
        try:
            for raw in iter(lambda: stream.readline(MAX_LINE_BYTES), b""):
                self.add(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
        finally:
            stream.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._handler.close()
