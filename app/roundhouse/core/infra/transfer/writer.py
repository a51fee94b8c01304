"""The partial file, written in large buffers by a worker thread while the next one arrives.

Opened never through a link, a second name or a device planted at its name; what the OS
refuses is told in the caller's words (`TransferWords`)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from roundhouse.core.infra.transfer.words import PLAIN_WORDS, TransferWords

_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
# Where the OS has it (not Windows), a link as the last part of the path fails the open.
NOFOLLOW: int | None = getattr(os, "O_NOFOLLOW", None)
_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
# Readable by all, as huggingface_hub's blobs usually are, but writable by this account only.
_PARTIAL_MODE = 0o644


class PartialFile(Protocol):
    """What the writer needs of an open file (a raw, unbuffered one by default)."""

    def write(self, data: bytes | bytearray | memoryview, /) -> int | None: ...
    def fileno(self) -> int: ...
    def close(self) -> None: ...


# (path, append) -> an open file: append keeps the bytes there, else the file is emptied.
Opener = Callable[[Path, bool], PartialFile]


def open_partial(path: Path, append: bool, words: TransferWords = PLAIN_WORDS) -> PartialFile:
    """The partial file for writing at its end (emptied first unless `append`), never
    through a link, a second name or a device planted in its place (a shared cache):
    words.planted then, and whatever was planted, or points elsewhere, is not touched."""
    fd = open_no_follow(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, words=words)
    if not append:
        try:
            os.ftruncate(fd, 0)  # after the checks, not O_TRUNC: a hard link's target stays
        except BaseException:
            os.close(fd)
            raise
    # Unbuffered: the writer hands over megabytes at a time, and a short write on a full
    # disk must show in the file's size, not in a Python buffer that is lost.
    return os.fdopen(fd, "ab", buffering=0)


def truncate_partial(path: Path, size: int, words: TransferWords = PLAIN_WORDS) -> None:
    """Cut the partial file back to `size` bytes, with open_partial's checks."""
    fd = open_no_follow(path, os.O_WRONLY, words=words)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)


def open_no_follow(
    path: Path,
    flags: int,
    nofollow: int | None = NOFOLLOW,
    *,
    words: TransferWords = PLAIN_WORDS,
) -> int:
    """os.open of a plain file with no other name, never through a link: O_NOFOLLOW where
    the OS has it, else (Windows) a look at the path first, where a symlink or any other
    reparse point is refused. words.planted for anything else found at `path`."""
    # Non-blocking while it opens: a FIFO planted at the name would hang a writer for good.
    flags |= getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0) | _NONBLOCK
    if nofollow is None:
        _refuse_planted(path, words)
    else:
        flags |= nofollow
    try:
        fd = os.open(path, flags, _PARTIAL_MODE)
    except OSError:
        _refuse_planted(path, words)  # ELOOP (EMLINK on FreeBSD) for a link, ENXIO for a FIFO
        raise
    try:
        check_own_file(path, os.fstat(fd), words)
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_own_file(path: Path, info: os.stat_result, words: TransferWords = PLAIN_WORDS) -> None:
    """words.planted unless the open file is a plain file with no other name: a hard link
    planted at the partial's name would have the download write into its other name."""
    if not stat.S_ISREG(info.st_mode):
        raise words.planted(path, "is not a plain file")
    if info.st_nlink > 1:
        raise words.planted(path, "has another name elsewhere (a hard link)")


def _refuse_planted(path: Path, words: TransferWords) -> None:
    """words.planted when a link or anything but a plain file is at `path`."""
    try:
        info = os.lstat(path)
    except OSError:
        return
    reparse = getattr(info, "st_file_attributes", 0) & stat.FILE_ATTRIBUTE_REPARSE_POINT
    if stat.S_ISLNK(info.st_mode) or reparse:
        raise words.planted(path, "is a link")
    if not stat.S_ISREG(info.st_mode):
        raise words.planted(path, "is not a plain file")


def write_error(path: Path, exc: OSError, words: TransferWords = PLAIN_WORDS) -> Exception:
    """A full disk (or quota) says so; any other failure names the file and the reason."""
    if exc.errno in _FULL:
        return words.disk_full(path)
    return words.write_failed(path, str(exc.strerror or exc))


def partial_size(path: Path) -> int:
    """The bytes a partial file holds; 0 when there is none, or something else is there (a
    link is not followed: opening it for the download refuses it with words)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


def fsync_path(path: Path, words: TransferWords = PLAIN_WORDS) -> None:
    """Flush a finished file's data to the disk before it is trusted after a crash."""
    fd = open_no_follow(path, os.O_RDONLY, words=words)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class PartialWriter:
    """Appends buffers to the partial file one at a time in a worker thread, so the next
    buffer is received meanwhile. `synced` counts the bytes made durable by fsync."""

    def __init__(
        self, path: Path, handle: PartialFile, start: int, words: TransferWords = PLAIN_WORDS
    ) -> None:
        self.path = path
        self._words = words
        self._handle = handle
        self.written = start
        self.synced = start
        self._pending: asyncio.Future[None] | None = None
        self._closed = False

    @classmethod
    async def open(
        cls, path: Path, start: int, opener: Opener, words: TransferWords = PLAIN_WORDS
    ) -> PartialWriter:
        """Open for appending at `start` (the file's size), or emptied when `start` is 0."""
        try:
            handle = await asyncio.to_thread(opener, path, start > 0)
        except OSError as exc:
            raise write_error(path, exc, words) from exc
        return cls(path, handle, start, words)

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
            raise write_error(self.path, exc, self._words) from exc

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
