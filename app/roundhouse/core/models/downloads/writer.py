"""The partial file, written in large buffers by a worker thread while the next one arrives."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from roundhouse.core.models.downloads.errors import DiskFullError, DownloadError

_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class PartialFile(Protocol):
    """What the writer needs of an open file (a raw, unbuffered one by default)."""

    def write(self, data: bytes | bytearray | memoryview, /) -> int | None: ...
    def fileno(self) -> int: ...
    def close(self) -> None: ...


# (path, append) -> an open file: append keeps the bytes there, else the file is emptied.
Opener = Callable[[Path, bool], PartialFile]


def open_partial(path: Path, append: bool) -> PartialFile:
    # Unbuffered: the writer hands over megabytes at a time, and a short write on a full
    # disk must show in the file's size, not in a Python buffer that is lost.
    return path.open("ab" if append else "wb", buffering=0)


def write_error(path: Path, exc: OSError) -> DownloadError:
    """A full disk (or quota) says so; any other failure names the file and the reason."""
    if exc.errno in _FULL:
        return DiskFullError(path.parent)
    return DownloadError(
        f"Cannot write {path}: {exc.strerror or exc}. Check that the folder is writable, "
        "then resume the download; the part already downloaded is kept."
    )


class PartialWriter:
    """Appends buffers to the partial file one at a time in a worker thread, so the next
    buffer is received meanwhile. `synced` counts the bytes made durable by fsync."""

    def __init__(self, path: Path, handle: PartialFile, start: int) -> None:
        self.path = path
        self._handle = handle
        self.written = start
        self.synced = start
        self._pending: asyncio.Future[None] | None = None
        self._closed = False

    @classmethod
    async def open(cls, path: Path, start: int, opener: Opener) -> PartialWriter:
        """Open for appending at `start` (the file's size), or emptied when `start` is 0."""
        try:
            handle = await asyncio.to_thread(opener, path, start > 0)
        except OSError as exc:
            raise write_error(path, exc) from exc
        return cls(path, handle, start)

    async def write(self, chunks: list[bytes], *, sync: bool = False) -> None:
        """Hand `chunks` over (the writer owns the list now) once the previous write is
        done; with `sync`, fsync after it. A failed write is raised by the next call, or by
        close()."""
        await self._settle()
        self._pending = asyncio.ensure_future(asyncio.to_thread(self._write_all, chunks, sync))

    def _write_all(self, chunks: list[bytes], sync: bool) -> None:
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    count = self._handle.write(view)
                    if count is None:  # only a non-blocking file returns None; ours never is
                        raise OSError(errno.EAGAIN, "the file accepted nothing")
                    self.written += count
                    view = view[count:]
            if sync:
                self._fsync()
        except OSError as exc:
            raise write_error(self.path, exc) from exc

    def _fsync(self) -> None:
        written = self.written
        os.fsync(self._handle.fileno())
        self.synced = written

    async def close(self, *, sync: bool = True) -> None:
        """Wait for the write in flight (even when cancelled: the thread must not outlive
        the file), fsync what reached the file (unless `sync` is false), close. Raises a
        write failure not yet raised; on a full disk whatever fsync still accepts is kept
        as durable."""
        if self._closed:
            return
        self._closed = True
        cancelled, failure = await self._drain()
        try:
            if sync:
                with contextlib.suppress(OSError):
                    await asyncio.to_thread(self._fsync)
        finally:
            with contextlib.suppress(OSError):
                self._handle.close()  # after the thread is done: its fd cannot be reused
        if cancelled:
            raise asyncio.CancelledError
        if failure is not None:
            raise failure

    async def _settle(self) -> None:
        pending = self._pending
        if pending is None:
            return
        try:
            # Shielded: when this task is cancelled, close() still waits for the thread.
            await asyncio.shield(pending)
        except asyncio.CancelledError:
            raise
        except BaseException:
            self._pending = None  # raised here, so close() does not raise it again
            raise
        self._pending = None

    async def _drain(self) -> tuple[bool, BaseException | None]:
        """Wait until no thread writes: (a cancellation arrived meanwhile, the write's
        failure if it had one)."""
        pending, self._pending = self._pending, None
        cancelled = False
        while pending is not None and not pending.done():
            with contextlib.suppress(Exception):
                try:
                    await asyncio.shield(pending)
                except asyncio.CancelledError:
                    cancelled = True
        if pending is None or pending.cancelled():
            return cancelled, None
        return cancelled, pending.exception()
