"""Metadata values: scalars, strings and arrays, with long arrays summarized, not loaded."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TypeAlias

from roundhouse.core.knowledge.gguf.constants import GGUFValueType
from roundhouse.core.knowledge.gguf.cursor import Cursor
from roundhouse.core.knowledge.gguf.errors import GgufError


@dataclass(frozen=True)
class ArrayInfo:
    """An array too long to keep (a tokenizer's vocabulary, say): its element type and length."""

    type: GGUFValueType
    length: int


GgufValue: TypeAlias = "int | float | bool | str | list[GgufValue] | ArrayInfo"

# Arrays up to this length are kept as lists (per-layer head counts, window patterns);
# longer ones become an ArrayInfo and their bytes are skipped.
MAX_LIST = 1024
MAX_STRING = 16 << 20  # a chat template is tens of KiB; a value string cannot need more
MAX_DEPTH = 3  # an array of arrays of arrays; real files use no nesting at all
MAX_NESTED = 1 << 16  # inner arrays in the whole header

SCALARS: dict[GGUFValueType, struct.Struct] = {
    GGUFValueType.UINT8: struct.Struct("<B"),
    GGUFValueType.INT8: struct.Struct("<b"),
    GGUFValueType.UINT16: struct.Struct("<H"),
    GGUFValueType.INT16: struct.Struct("<h"),
    GGUFValueType.UINT32: struct.Struct("<I"),
    GGUFValueType.INT32: struct.Struct("<i"),
    GGUFValueType.FLOAT32: struct.Struct("<f"),
    GGUFValueType.BOOL: struct.Struct("<?"),
    GGUFValueType.UINT64: struct.Struct("<Q"),
    GGUFValueType.INT64: struct.Struct("<q"),
    GGUFValueType.FLOAT64: struct.Struct("<d"),
}
_KNOWN = {t.value: t for t in GGUFValueType}
_ARRAY_HEADER = 12  # element type (u32) and count (u64)


def value_type(code: int, what: str) -> GGUFValueType:
    found = _KNOWN.get(code)
    if found is None:
        raise GgufError(f"{what} has an unknown value type ({code})")
    return found


class ValueReader:
    """Reads one metadata value at the cursor; counts inner arrays across the whole header."""

    def __init__(self, cur: Cursor) -> None:
        self.cur = cur
        self.nested = 0

    def value(self, vtype: GGUFValueType, what: str) -> GgufValue:
        if vtype == GGUFValueType.STRING:
            return self.cur.string(MAX_STRING, what)
        if vtype == GGUFValueType.ARRAY:
            return self._array(what, depth=1, keep=True)
        fmt = SCALARS[vtype]
        return self.cur.unpack(fmt, what)[0]  # type: ignore[return-value]

    def _array(self, what: str, *, depth: int, keep: bool) -> GgufValue:
        cur = self.cur
        etype = value_type(cur.u32(what), f"{what} (an array)")
        count = cur.u64(what)
        keep = keep and count <= MAX_LIST
        if etype in SCALARS:
            fmt = SCALARS[etype]
            if not keep:
                cur.skip(count * fmt.size, what)
                return ArrayInfo(etype, count)
            cur.require(count * fmt.size, what)
            many = struct.Struct(f"<{count}{fmt.format[-1]}")
            return list(cur.unpack(many, what))  # type: ignore[arg-type]
        if etype == GGUFValueType.STRING:
            cur.require(count * 8, what)  # every string takes at least its length
            if not keep:
                # numpy (11 MB) loads with the first header that has a string array.
                from roundhouse.core.knowledge.gguf.strings import skip_strings

                skip_strings(cur, count, what)
                return ArrayInfo(etype, count)
            return [cur.string(MAX_STRING, what) for _ in range(count)]
        if depth >= MAX_DEPTH:
            raise GgufError(f"{what} nests arrays more than {MAX_DEPTH} deep")
        cur.require(count * _ARRAY_HEADER, what)
        self.nested += count
        if self.nested > MAX_NESTED:
            raise GgufError(f"{what} holds more than {MAX_NESTED:,} arrays inside arrays")
        if keep:
            return [self._array(what, depth=depth + 1, keep=True) for _ in range(count)]
        for _ in range(count):
            self._array(what, depth=depth + 1, keep=False)
        return ArrayInfo(etype, count)
