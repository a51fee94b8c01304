"""Serving a file's bytes: Range parsing, the sendfile fast path, and the faulty slow path."""

from __future__ import annotations

import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from tests.fakes.hub.faults import Fault

CHUNK = 256 * 1024
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


class Unsatisfiable(Exception):
    """The Range starts past the end of the file: 416."""


@dataclass(frozen=True)
class Span:
    start: int
    end: int  # exclusive
    partial: bool  # answer 206 with Content-Range

    @property
    def length(self) -> int:
        return self.end - self.start


def choose_span(range_header: str | None, size: int, honour: bool = True) -> Span:
    """The bytes to send for a `Range` header (one range; others get the whole file)."""
    whole = Span(0, size, partial=False)
    if not range_header or not honour:
        return whole
    match = _RANGE.fullmatch(range_header.strip())
    if match is None:
        return whole  # several ranges or another unit: RFC 9110 lets us ignore it
    first, last = match.groups()
    if not first:  # bytes=-N: the last N bytes
        if not last:
            return whole
        count = min(int(last), size)
        if count == 0:
            raise Unsatisfiable
        return Span(size - count, size, partial=True)
    start = int(first)
    end = size if not last else min(int(last) + 1, size)
    if start >= size or end <= start:
        raise Unsatisfiable
    return Span(start, end, partial=True)


def send_span(sock: socket.socket, disk: Path, span: Span, fault: Fault | None) -> int:
    """Send the span's bytes (through the faults, if any); returns how many went out."""
    with disk.open("rb") as f:
        if fault is None or not fault.shapes_bytes():
            return sock.sendfile(f, span.start, span.length) if span.length else 0
        return _send_slowly(sock, f, span, fault, disk.stat().st_size)


def _send_slowly(sock: socket.socket, f: BinaryIO, span: Span, fault: Fault, size: int) -> int:
    bad = fault.corrupt_offset(size)
    limit = span.length if fault.drop_after is None else min(span.length, fault.drop_after)
    chunk = CHUNK
    if fault.throttle_bps:
        chunk = max(1, min(CHUNK, fault.throttle_bps // 20))
    started = time.monotonic()
    stalled = False
    sent = 0
    f.seek(span.start)
    while sent < limit:
        want = min(chunk, limit - sent)
        if fault.stall_after is not None and not stalled and sent + want > fault.stall_after:
            want = max(fault.stall_after - sent, 0)
            if want == 0:
                time.sleep(fault.stall_s)
                stalled = True
                continue
        data = bytearray(f.read(want))
        if not data:
            break
        pos = span.start + sent
        if bad is not None and pos <= bad < pos + len(data):
            data[bad - pos] ^= 0xFF
        sock.sendall(data)
        sent += len(data)
        if fault.throttle_bps:
            ahead = sent / fault.throttle_bps - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
    return sent
