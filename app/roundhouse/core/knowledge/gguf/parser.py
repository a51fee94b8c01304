"""The GGUF header parser (versions 2 and 3, little-endian), resumable for partial sources."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from roundhouse.core.knowledge.gguf.constants import (
    GGML_QUANT_SIZES,
    GGMLQuantizationType,
    GGUFValueType,
    Keys,
)
from roundhouse.core.knowledge.gguf.cursor import Cursor
from roundhouse.core.knowledge.gguf.errors import GgufError, NeedMoreBytes
from roundhouse.core.knowledge.gguf.header import GgufHeader, TensorInfo
from roundhouse.core.knowledge.gguf.sources import ByteSource
from roundhouse.core.knowledge.gguf.values import GgufValue, ValueReader, value_type

MAGIC = b"GGUF"
VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_KV = 1 << 16  # real models have about 40
MAX_TENSORS = 1 << 17  # real models have up to a few thousand
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_KEY = 1 << 16
MAX_NAME = 63  # GGML_MAX_NAME less its terminating zero: llama.cpp refuses longer names
INT64_MAX = (1 << 63) - 1
# The least each entry can take, to refuse impossible counts before reading them.
MIN_KV_BYTES = 8 + 4 + 1
MIN_TENSOR_BYTES = 8 + 4 + 4 + 8
OLD_FORMAT = "download a file converted by a recent llama.cpp"
_GGML_TYPES = {t.value: t for t in GGMLQuantizationType if t in GGML_QUANT_SIZES}


class _RawTensor(NamedTuple):
    name: str
    shape: tuple[int, ...]
    type: GGMLQuantizationType
    offset: int


class HeaderParser:
    """Parses a header from a byte source. A partial source (a URL's fetched prefix) may
    raise NeedMoreBytes; `run()` can then be called again once more bytes are there, and
    goes on from the last whole metadata entry or tensor info."""

    def __init__(self, source: ByteSource) -> None:
        self._cur = Cursor(source)
        self._values = ValueReader(self._cur)
        self._version = 0
        self._n_kv = self._n_tensors = 0
        self._metadata: dict[str, GgufValue] = {}
        self._types: dict[str, GGUFValueType] = {}
        self._tensors: list[_RawTensor] = []
        self._names: set[str] = set()

    def run(self) -> GgufHeader:
        if not self._version:
            self._resumable(self._preamble)
        while len(self._metadata) < self._n_kv:
            self._resumable(self._entry)
        while len(self._tensors) < self._n_tensors:
            self._resumable(self._tensor_info)
        return self._finish()

    def run_until(self, enough: Callable[[Mapping[str, GgufValue]], bool]) -> GgufHeader | None:
        """The metadata read so far as soon as `enough(metadata)` holds, checked as far as it
        goes (an incomplete GgufHeader); None when it never does, and `run()` then goes on
        from where this stopped."""
        if not self._version:
            self._resumable(self._preamble)
        while len(self._metadata) < self._n_kv:
            if enough(self._metadata):
                return GgufHeader(
                    version=self._version,
                    file_size=self._cur.source.size,
                    metadata=dict(self._metadata),
                    value_types=dict(self._types),
                    tensors=(),
                    alignment=_alignment(self._metadata),
                    data_offset=0,
                    complete=False,
                )
            self._resumable(self._entry)
        return None

    def _resumable(self, step: Callable[[], None]) -> None:
        pos, nested = self._cur.pos, self._values.nested
        try:
            step()
        except NeedMoreBytes:
            self._cur.pos, self._values.nested = pos, nested
            raise

    def _preamble(self) -> None:
        cur = self._cur
        if cur.source.size < 4 or cur.raw(4, "the signature") != MAGIC:
            raise GgufError("it does not start with the GGUF signature")
        version = cur.u32("the version")
        if version not in VERSIONS:
            raise _version_error(version)
        n_tensors, n_kv = cur.u64("the tensor count"), cur.u64("the metadata count")
        if n_kv > MAX_KV:
            raise GgufError(f"it claims {n_kv:,} metadata entries (at most {MAX_KV:,} allowed)")
        if n_tensors > MAX_TENSORS:
            raise GgufError(f"it claims {n_tensors:,} tensors (at most {MAX_TENSORS:,} allowed)")
        cur.require(n_kv * MIN_KV_BYTES + n_tensors * MIN_TENSOR_BYTES, "the claimed entries")
        self._n_tensors, self._n_kv = n_tensors, n_kv
        self._version = version

    def _entry(self) -> None:
        cur = self._cur
        index = len(self._metadata)
        key = cur.string(MAX_KEY, f"the name of metadata entry {index}")
        what = f"metadata {key!r}"
        if key in self._metadata:
            raise GgufError(f"{what} appears twice")
        vtype = value_type(cur.u32(what), what)
        value = self._values.value(vtype, what)
        self._metadata[key], self._types[key] = value, vtype

    def _tensor_info(self) -> None:
        cur = self._cur
        index = len(self._tensors)
        name = cur.string(MAX_NAME, f"the name of tensor {index}")
        what = f"tensor {name!r}"
        if name in self._names:
            raise GgufError(f"{what} appears twice")
        n_dims = cur.u32(what)
        if n_dims > MAX_DIMS:
            raise GgufError(f"{what} has {n_dims:,} dimensions (at most {MAX_DIMS})")
        shape = tuple(cur.u64(what) for _ in range(n_dims))
        code = cur.u32(what)
        ggml_type = _GGML_TYPES.get(code)
        if ggml_type is None:
            raise GgufError(
                f"{what} has a tensor type this version does not know ({code})",
                advice="the file may be newer than this app: update it, or choose another "
                "quantization of the model",
            )
        offset = cur.u64(what)
        self._tensors.append(_RawTensor(name, shape, ggml_type, offset))
        self._names.add(name)

    def _finish(self) -> GgufHeader:
        alignment = _alignment(self._metadata)
        size = self._cur.source.size
        data_offset = -(-self._cur.pos // alignment) * alignment
        if self._tensors and data_offset > size:
            raise GgufError("its tensor data would start past the end of the file")
        tensors = tuple(_tensor(raw, alignment, data_offset, size) for raw in self._tensors)
        return GgufHeader(
            version=self._version,
            file_size=size,
            metadata=self._metadata,
            value_types=self._types,
            tensors=tensors,
            alignment=alignment,
            data_offset=data_offset,
        )


def _version_error(version: int) -> GgufError:
    if version == 1:
        return GgufError("it is GGUF version 1, an early format not read here", advice=OLD_FORMAT)
    if int.from_bytes(version.to_bytes(4, "little"), "big") in VERSIONS:
        return GgufError(
            "it is a big-endian GGUF (made for IBM Z machines), not read here",
            advice="download the ordinary little-endian file of the model",
        )
    return GgufError(
        f"it is GGUF version {version:,}, which this app does not know",
        advice="if the file is fine, it is newer than this app: update it",
    )


def _alignment(metadata: dict[str, GgufValue]) -> int:
    value = metadata.get(Keys.General.ALIGNMENT, DEFAULT_ALIGNMENT)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise GgufError(f"its {Keys.General.ALIGNMENT} is {value!r}, not a positive integer")
    if value & (value - 1):
        raise GgufError(f"its {Keys.General.ALIGNMENT} is {value:,}, not a power of two")
    return value


def _tensor(raw: _RawTensor, alignment: int, data_offset: int, size: int) -> TensorInfo:
    what = f"tensor {raw.name!r}"
    n_elements = 1
    for dim in raw.shape:
        n_elements *= dim
        if dim > INT64_MAX or n_elements > INT64_MAX:
            raise GgufError(f"{what} has an impossible shape {list(raw.shape)}")
    block, type_size = GGML_QUANT_SIZES[raw.type]
    row = raw.shape[0] if raw.shape else 1
    if row % block:
        raise GgufError(
            f"{what} has rows of {row:,} values, not a multiple of the {block} that "
            f"{raw.type.name} needs"
        )
    n_bytes = n_elements // block * type_size
    if raw.offset % alignment:
        raise GgufError(f"{what} starts at {raw.offset:,}, not a multiple of {alignment}")
    end = data_offset + raw.offset + n_bytes
    if end > size:
        raise GgufError(
            f"{what} lies past the end of the file (it needs {end:,} bytes, the file has {size:,})",
            advice="the download is incomplete or the file is damaged; download it again",
        )
    return TensorInfo(raw.name, raw.shape, raw.type, raw.offset, n_elements, n_bytes)
