"""Check a finished file against the Hub's digest, in a thread that stops when cancelled."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

from roundhouse.core.infra.threads import check, run_stoppable

READ_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Expected:
    """What the Hub says the file is: its size, and the LFS sha256 or the git blob id."""

    size: int
    sha256: str | None = None
    git_oid: str | None = None


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str = ""


def git_blob_sha1_prefix(size: int) -> bytes:
    """Git hashes a file as sha1(b"blob <size>\\0" + content): the Hub's id of a small file."""
    return b"blob %d\x00" % size


def _digest(path: Path, expected: Expected, stop: threading.Event) -> tuple[int, str, str]:
    """(size read, algorithm, hex digest) of the file, read in large blocks."""
    size = path.stat().st_size
    if expected.sha256 is not None:
        algorithm, hasher = "sha256", hashlib.sha256()
    else:
        algorithm, hasher = "git sha1", hashlib.sha1(git_blob_sha1_prefix(size))
    with path.open("rb", buffering=0) as handle:
        # hashlib releases the GIL on large blocks, so the event loop runs meanwhile.
        while block := handle.read(READ_BYTES):
            check(stop)
            hasher.update(block)
    return size, algorithm, hasher.hexdigest()


async def verify_file(path: Path, expected: Expected) -> Verdict:
    """Compare size and digest; the size alone when the Hub gave no digest."""
    if expected.sha256 is None and expected.git_oid is None:
        actual = await asyncio.to_thread(lambda: path.stat().st_size)
        if actual != expected.size:
            return Verdict(False, f"it is {actual:,} bytes, not the {expected.size:,} listed")
        return Verdict(True)
    size, algorithm, digest = await run_stoppable(lambda stop: _digest(path, expected, stop))
    if size != expected.size:
        return Verdict(False, f"it is {size:,} bytes, not the {expected.size:,} listed")
    wanted = expected.sha256 if expected.sha256 is not None else expected.git_oid
    if digest != wanted:
        return Verdict(
            False, f"its {algorithm} is {digest[:12]}…, the Hub lists {str(wanted)[:12]}…"
        )
    return Verdict(True)
