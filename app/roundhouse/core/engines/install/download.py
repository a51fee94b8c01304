"""Fetch one file over HTTP into a partial file: resume with Range, verify size and sha256."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO

import httpx

from roundhouse import __version__
from roundhouse.core.engines.install.errors import ChecksumError, DownloadError, InstallError
from roundhouse.core.infra.threads import check, run_stoppable

# (bytes done, bytes in all or None, recent bytes per second or None)
TransferCallback = Callable[[int, int | None, float | None], None]

_DIGEST = re.compile(r"^sha256[:-]([0-9a-fA-F]{64})$")
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")
PROGRESS_EVERY_S = 0.25
RATE_WINDOW_S = 3.0


def parse_digest(digest: str) -> str:
    """The hex of a "sha256:<hex>" digest; InstallError for anything else."""
    found = _DIGEST.match(digest.strip())
    if not found:
        raise InstallError(
            f"The release lists the digest {digest!r}, which is not a sha256; "
            "Roundhouse cannot verify this file."
        )
    return found.group(1).lower()


class _Interrupted(Exception):
    """The transfer stopped early for a reason worth retrying (the partial file is kept)."""


class _Rate:
    """Bytes per second over the last few seconds (None until there is a span to measure)."""

    def __init__(self) -> None:
        self.points: deque[tuple[float, int]] = deque()

    def add(self, now: float, done: int) -> float | None:
        self.points.append((now, done))
        while len(self.points) > 2 and now - self.points[0][0] > RATE_WINDOW_S:
            self.points.popleft()
        first_t, first_done = self.points[0]
        return (done - first_done) / (now - first_t) if now > first_t else None


async def download_file(
    client: httpx.AsyncClient,
    url: str,
    dest: Path,
    *,
    size: int | None,
    sha256: str | None,
    on_progress: TransferCallback | None = None,
    on_verifying: Callable[[], None] | None = None,
    attempts: int = 3,
    retry_delay_s: float = 1.0,
) -> None:
    """Download `url` to `dest`, resuming a partial `dest`; verified when this returns.

    A dropped connection is resumed with a Range request up to `attempts` times (a server
    that ignores Range is read from the start). On a size or sha256 mismatch the file is
    deleted and ChecksumError raised; on other failures, and on cancellation, the partial
    file stays for the next call to resume.
    """
    expected = sha256.lower() if sha256 else None
    last: _Interrupted | None = None
    for attempt in range(max(1, attempts)):
        have = _size(dest)
        if size is not None and have > size:
            _delete(dest)
            have = 0
        if size is not None and have == size:
            break
        try:
            await _fetch(client, url, dest, have, size, on_progress)
        except _Interrupted as exc:
            last = exc
            if attempt + 1 < attempts:
                await asyncio.sleep(retry_delay_s * (attempt + 1))
            continue
        last = None
        if size is None or _size(dest) == size:
            break
        last = _Interrupted("the connection ended early")
    if last is not None:
        raise DownloadError(
            f"Downloading {dest.name} failed: {last}. The part already downloaded is kept; "
            "install again to resume."
        )
    if on_verifying is not None:
        on_verifying()
    await _verify(dest, size, expected)


async def _verify(dest: Path, size: int | None, expected: str | None) -> None:
    actual_size = _size(dest)
    if size is not None and actual_size != size:
        _delete(dest)
        raise ChecksumError(
            f"{dest.name} is {actual_size} bytes, but the release lists {size}; it was deleted. "
            "Try again; if it happens again the release may be broken, so choose another."
        )
    if expected is None:
        return
    # Hashed once, whole, after the transfer: a resumed file is checked end to end.
    digest = await _sha256(dest)
    if digest != expected:
        _delete(dest)
        raise ChecksumError(
            f"{dest.name} does not match the release's sha256 (got {digest[:12]}…, expected "
            f"{expected[:12]}…); it was deleted. Try again; if it happens again, the download "
            "is being altered on the way or the release is broken."
        )


async def _fetch(
    client: httpx.AsyncClient,
    url: str,
    dest: Path,
    have: int,
    size: int | None,
    on_progress: TransferCallback | None,
) -> None:
    headers = {"User-Agent": f"Roundhouse/{__version__}", "Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        async with client.stream("GET", url, headers=headers, follow_redirects=True) as reply:
            status = reply.status_code
            if status == 416 and have:
                # The partial file is longer than the server's, or the server changed it.
                _delete(dest)
                raise _Interrupted("the server refused to resume; starting over")
            if status >= 500 or status == 429:
                raise _Interrupted(f"the server answered HTTP {status}")
            if status not in (200, 206):
                raise DownloadError(
                    f"{url} answered HTTP {status}; the release may have been withdrawn. "
                    "Choose another release."
                )
            append, total = _resume_point(reply, have)
            if not append:
                have = 0
            if size is not None and total is not None and total != size:
                _delete(dest)
                raise ChecksumError(
                    f"The server offers {total} bytes for {dest.name}, but the release lists "
                    f"{size}; nothing was kept. Try again later or choose another release."
                )
            await _receive(reply, dest, append, have, size or total, on_progress)
    except httpx.TransportError as exc:
        raise _Interrupted(str(exc) or type(exc).__name__) from exc


def _resume_point(reply: httpx.Response, have: int) -> tuple[bool, int | None]:
    """(append to the partial file?, the file's full size if the server says)."""
    if reply.status_code == 206:
        found = _CONTENT_RANGE.match(reply.headers.get("content-range", ""))
        if not found or int(found.group(1)) != have:
            raise _Interrupted("the server resumed at the wrong place")
        return True, None if found.group(3) == "*" else int(found.group(3))
    length = reply.headers.get("content-length")
    return False, int(length) if length and length.isdigit() else None


async def _receive(
    reply: httpx.Response,
    dest: Path,
    append: bool,
    done: int,
    total: int | None,
    on_progress: TransferCallback | None,
) -> None:
    rate = _Rate()
    last_report = 0.0
    out = _open(dest, append)
    try:
        async for chunk in reply.aiter_raw():
            try:
                out.write(chunk)
            except OSError as exc:
                raise _disk_error(dest, exc) from exc
            done += len(chunk)
            if total is not None and done > total:
                out.close()
                _delete(dest)
                raise ChecksumError(
                    f"The server sent more than the {total} bytes of {dest.name}; nothing was "
                    "kept. Try again later or choose another release."
                )
            now = time.monotonic()
            bps = rate.add(now, done)
            if on_progress is not None and now - last_report >= PROGRESS_EVERY_S:
                last_report = now
                on_progress(done, total, bps)
    finally:
        out.close()
    if on_progress is not None:
        on_progress(done, total, rate.add(time.monotonic(), done))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _delete(path: Path) -> None:
    path.unlink(missing_ok=True)


def _open(dest: Path, append: bool) -> IO[bytes]:
    dest.parent.mkdir(parents=True, exist_ok=True)
    return dest.open("ab" if append else "wb")


def _disk_error(dest: Path, exc: OSError) -> InstallError:
    if exc.errno == errno.ENOSPC:
        return InstallError(
            f"The disk holding {dest.parent} is full. Free some space, then install again; "
            "the part already downloaded is kept."
        )
    return InstallError(f"Cannot write {dest}: {exc.strerror or exc}.")


async def _sha256(path: Path) -> str:
    def work(stop: threading.Event) -> str:
        hasher = hashlib.sha256()
        with path.open("rb") as fh:
            while chunk := fh.read(4 * 1024 * 1024):
                check(stop)
                hasher.update(chunk)
        return hasher.hexdigest()

    return await run_stoppable(work)


def fsync_file(path: Path) -> None:
    """Flush a finished download to disk before it is trusted after a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
