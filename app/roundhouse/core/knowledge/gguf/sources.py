"""Where header bytes come from: a file read in chunks, or the fetched prefix of a URL."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO, Protocol

from roundhouse.core.knowledge.gguf.errors import GgufError, NeedMoreBytes


class ByteSource(Protocol):
    """Random access to the first bytes of a file whose total size is known."""

    @property
    def size(self) -> int: ...

    def read(self, offset: int, min_len: int, max_len: int) -> bytes | memoryview:
        """At least `min_len` and at most `max_len` bytes from `offset` (the caller keeps
        `offset + min_len` within `size`); a partial source raises NeedMoreBytes instead."""
        ...


class FileSource:
    """A file opened by the caller, read with seek and read: never mapped, never whole."""

    def __init__(self, file: BinaryIO, size: int) -> None:
        self._file = file
        self._size = size

    @property
    def size(self) -> int:
        return self._size

    def read(self, offset: int, min_len: int, max_len: int) -> bytes:
        self._file.seek(offset)
        data = self._file.read(min(max_len, self._size - offset))
        if len(data) < min_len:
            raise GgufError(
                "the file got shorter while it was being read",
                advice="wait until whatever writes it has finished, then try again",
            )
        return data


class BufferSource:
    """The first bytes of a remote file of known size, grown by the fetcher on demand."""

    def __init__(self, size: int, data: bytes = b"") -> None:
        self._size = size
        self._data = data

    @property
    def size(self) -> int:
        return self._size

    @property
    def fetched(self) -> int:
        return len(self._data)

    def extend(self, more: bytes) -> None:
        # A new bytes object each time, so views handed out earlier stay valid.
        self._data = self._data + more

    def read(self, offset: int, min_len: int, max_len: int) -> memoryview:
        if offset + min_len > len(self._data):
            raise NeedMoreBytes(offset + min_len)
        return memoryview(self._data)[offset : offset + max_len]


def open_file_source(path: Path) -> tuple[BinaryIO, FileSource]:
    """Open `path` for reading; the caller closes the returned file."""
    file = path.open("rb", buffering=0)
    try:
        size = _size_of(file)
    except OSError:
        file.close()
        raise
    return file, FileSource(file, size)


def _size_of(file: BinaryIO) -> int:
    end = file.seek(0, 2)
    file.seek(0)
    return end
