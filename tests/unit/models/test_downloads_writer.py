"""The partial file's writer: a full disk is a clear error with what was written kept, and a
cancelled download never closes the file under a write in flight."""

from __future__ import annotations

import asyncio
import errno
import threading
import time
from pathlib import Path

import pytest

from roundhouse.core.infra.transfer.writer import PartialFile, PartialWriter
from roundhouse.core.models.downloads import DiskFullError, DownloadError
from roundhouse.core.models.downloads.layout import open_partial
from roundhouse.core.models.downloads.words import HUB_WORDS


class _Recorder:
    """A file that records writes and closes, slowly, and can fill up."""

    def __init__(self, path: Path, room: int | None = None, delay_s: float = 0.0) -> None:
        self._real = open_partial(path, False)
        self.room = room
        self.delay_s = delay_s
        self.events: list[str] = []
        self.writing = threading.Event()

    def write(self, data: bytes | bytearray | memoryview) -> int | None:
        self.writing.set()
        time.sleep(self.delay_s)
        if self.room is not None:
            if self.room == 0:
                raise OSError(errno.ENOSPC, "No space left on device")
            data = memoryview(data)[: self.room]
            self.room -= len(data)
        count = self._real.write(data)
        self.events.append(f"write {count}")
        return count

    def fileno(self) -> int:
        return self._real.fileno()

    def close(self) -> None:
        self.events.append("close")
        self._real.close()


def _opener(recorder: _Recorder) -> object:
    def opener(path: Path, append: bool) -> PartialFile:
        return recorder

    return opener


def test_a_full_disk_keeps_what_was_written(tmp_path: Path) -> None:
    path = tmp_path / "x.incomplete"
    recorder = _Recorder(path, room=1500)

    async def body() -> PartialWriter:
        writer = await PartialWriter.open(path, 0, _opener(recorder), HUB_WORDS)  # type: ignore[arg-type]
        await writer.write([b"a" * 1000])
        await writer.write([b"b" * 1000])  # 500 fit, then the disk is full
        with pytest.raises(DiskFullError) as full:
            await writer.close()
        assert full.value.folder == tmp_path
        return writer

    writer = asyncio.run(body())
    assert writer.written == writer.synced == 1500
    assert path.read_bytes() == b"a" * 1000 + b"b" * 500


def test_other_write_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.incomplete"
    recorder = _Recorder(path)

    def refuse(data: object) -> int:
        raise OSError(errno.EIO, "Input/output error")

    recorder.write = refuse  # type: ignore[method-assign]

    async def body() -> None:
        writer = await PartialWriter.open(path, 0, _opener(recorder), HUB_WORDS)  # type: ignore[arg-type]
        await writer.write([b"a"])
        with pytest.raises(DownloadError, match=r"Cannot write .*Input/output error"):
            await writer.close()

    asyncio.run(body())


def test_cancelling_waits_for_the_write_before_closing(tmp_path: Path) -> None:
    path = tmp_path / "x.incomplete"
    recorder = _Recorder(path, delay_s=0.3)

    async def body() -> None:
        writer = await PartialWriter.open(path, 0, _opener(recorder), HUB_WORDS)  # type: ignore[arg-type]

        async def download() -> None:
            try:
                await writer.write([b"a" * 10])
                await writer.write([b"b" * 10])  # waits for the first, slow write
            finally:
                await writer.close()

        task = asyncio.create_task(download())
        await asyncio.to_thread(recorder.writing.wait, 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(body())
    assert recorder.events == ["write 10", "close"]
    assert path.read_bytes() == b"a" * 10
