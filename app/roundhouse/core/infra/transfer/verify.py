"""Check a finished file against its expected size and digest (in a thread that stops when
cancelled); a file that fails is set aside in a quarantine folder, or deleted."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

from roundhouse.core.infra.threads import check, run_stoppable
from roundhouse.core.infra.transfer.words import PLAIN_WORDS, TransferWords
from roundhouse.core.infra.transfer.writer import fsync_path

READ_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Expected:
    """What the source says the file is: its size, and a sha256 or a git blob id."""

    size: int
    sha256: str | None = None
    git_oid: str | None = None


@dataclass(frozen=True)
class Verdict:
    """The check's outcome; for a failed one, what was found and where the file went."""

    ok: bool
    reason: str = ""
    size: int = 0  # the file's size as read
    digest: str | None = None  # the hex digest found, when there was one to compare
    wanted: str | None = None  # the hex digest expected
    moved_to: Path | None = None  # the quarantined file (None: it was deleted, or is fine)


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


async def verify_file(path: Path, expected: Expected, *, source: str = "the source") -> Verdict:
    """Compare size and digest; the size alone when no digest is known. `source` names who
    listed the file in the reason ("the Hub")."""
    if expected.sha256 is None and expected.git_oid is None:
        actual = await asyncio.to_thread(lambda: path.stat().st_size)
        if actual != expected.size:
            return Verdict(
                False, f"it is {actual:,} bytes, not the {expected.size:,} listed", size=actual
            )
        return Verdict(True, size=actual)
    size, algorithm, digest = await run_stoppable(lambda stop: _digest(path, expected, stop))
    wanted = (expected.sha256 if expected.sha256 is not None else expected.git_oid) or ""
    wanted = wanted.lower()
    if size != expected.size:
        return Verdict(
            False,
            f"it is {size:,} bytes, not the {expected.size:,} listed",
            size=size,
            digest=digest,
            wanted=wanted,
        )
    if digest != wanted:
        return Verdict(
            False,
            f"its {algorithm} is {digest[:12]}…, {source} lists {wanted[:12]}…",
            size=size,
            digest=digest,
            wanted=wanted,
        )
    return Verdict(True, size=size, digest=digest, wanted=wanted)


async def check_finished(
    path: Path,
    expected: Expected,
    *,
    quarantine_dir: Path | None,
    name: str = "",
    source: str = "the source",
    words: TransferWords = PLAIN_WORDS,
) -> Verdict:
    """Make the finished file durable, then verify it. One that fails is moved to
    `quarantine_dir/name` (kept for the user to inspect), or deleted when there is no
    quarantine; the verdict says which."""
    # Durable before it is trusted: the file is never synced again.
    await asyncio.to_thread(fsync_path, path, words)
    verdict = await verify_file(path, expected, source=source)
    if verdict.ok:
        return verdict
    if quarantine_dir is None:
        await asyncio.to_thread(path.unlink, True)
        return verdict
    moved = await asyncio.to_thread(move_to_quarantine, path, quarantine_dir, name or path.name)
    return Verdict(
        False, verdict.reason, verdict.size, verdict.digest, verdict.wanted, moved_to=moved
    )


def move_to_quarantine(source: Path, quarantine_dir: Path, name: str) -> Path:
    """Move a file that failed its check to `quarantine_dir/name` (never deleting it); a
    name already there gets a numbered twin."""
    quarantine_dir.mkdir(parents=True, exist_ok=True)
    target = quarantine_dir / name
    counter = 1
    while target.exists():
        target = quarantine_dir / f"{name}.{counter}"
        counter += 1
    try:
        source.replace(target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.move(source, target)  # another disk: copied, then the source removed
    return target
