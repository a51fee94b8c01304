"""A read position in a GGUF header; every read is checked against the file size and a cap."""

from __future__ import annotations

import struct

from roundhouse.core.knowledge.gguf.errors import GgufError
from roundhouse.core.knowledge.gguf.sources import ByteSource

# The header (metadata and tensor infos) of the largest real models is under 16 MiB; the
# cap keeps a hostile file from making us read, or loop over, gigabytes before refusing.
MAX_HEADER_BYTES = 64 << 20
CHUNK = 1 << 20
# A window shorter than this is refilled before the string skipper scans it.
MIN_WINDOW = 64 << 10

U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")


class Cursor:
    """Reads little-endian values from a byte source, one buffered chunk at a time."""

    def __init__(self, source: ByteSource, *, limit: int = MAX_HEADER_BYTES) -> None:
        self.source = source
        self.pos = 0
        self.cap = limit
        self.limit = min(source.size, limit)
        self._buf: bytes | memoryview = b""
        self._base = 0

    @property
    def remaining(self) -> int:
        """Bytes the header may still take from here."""
        return self.limit - self.pos

    def require(self, n: int, what: str) -> None:
        """Refuse now if `n` more bytes from here cannot be part of the header."""
        end = self.pos + n
        if end <= self.limit:
            return
        if end > self.source.size:
            raise GgufError(
                f"{what} runs past the end of the file (it needs {end:,} bytes, "
                f"the file has {self.source.size:,})"
            )
        raise GgufError(
            f"{what} would make the header larger than {self.cap >> 20} MiB, "
            "far more than any real model's"
        )

    def _at(self, n: int, what: str) -> int:
        """The buffer index where `n` bytes at the position start, refilling when needed."""
        i = self.pos - self._base
        if i >= 0 and i + n <= len(self._buf):
            return i
        self.require(n, what)
        self._buf = self.source.read(self.pos, n, min(max(n, CHUNK), self.limit - self.pos))
        self._base = self.pos
        return 0

    def u32(self, what: str = "a number") -> int:
        i = self._at(4, what)
        self.pos += 4
        return int(U32.unpack_from(self._buf, i)[0])

    def u64(self, what: str = "a number") -> int:
        i = self._at(8, what)
        self.pos += 8
        return int(U64.unpack_from(self._buf, i)[0])

    def unpack(self, fmt: struct.Struct, what: str) -> tuple[object, ...]:
        i = self._at(fmt.size, what)
        self.pos += fmt.size
        return fmt.unpack_from(self._buf, i)

    def raw(self, n: int, what: str) -> bytes:
        i = self._at(n, what)
        self.pos += n
        return bytes(self._buf[i : i + n])

    def string(self, max_len: int, what: str) -> str:
        n = self.u64(what)
        if n > max_len:
            raise GgufError(f"{what} claims {n:,} bytes, more than the {max_len:,} allowed")
        i = self._at(n, what)
        self.pos += n
        # Names and values are UTF-8 by the spec; a bad byte must not stop the whole read.
        return str(self._buf[i : i + n], "utf-8", "replace")

    def skip(self, n: int, what: str) -> None:
        self.require(n, what)
        self.pos += n

    def window(self, want: int) -> memoryview:
        """The contiguous bytes from the position on (at least 8, at most `want`)."""
        self.require(8, "a string")
        i = self.pos - self._base
        have = len(self._buf) - i if 0 <= i <= len(self._buf) else 0
        if have < min(want, MIN_WINDOW, self.remaining):
            size = min(max(want, CHUNK), self.remaining)
            self._buf = self.source.read(self.pos, 8, size)
            self._base, i = self.pos, 0
        return memoryview(self._buf)[i : i + min(want, self.remaining)]
