"""Malformed and hostile GGUF headers: each gives a GgufError in words, quickly, and small."""

from __future__ import annotations

import struct
import time
import tracemalloc
from pathlib import Path

import pytest
from gguf import GGMLQuantizationType, GGUFValueType

from roundhouse.core.knowledge.gguf import GgufError, read_gguf_header
from roundhouse.core.knowledge.gguf.errors import DAMAGED
from tests.fixtures.models.gguf_headers import (
    build_gguf,
    pack_array,
    pack_kv,
    pack_string,
    pack_tensor_info,
)

F32 = GGMLQuantizationType.F32
ARRAY, STRING, U32 = GGUFValueType.ARRAY, GGUFValueType.STRING, GGUFValueType.UINT32


def _small_file() -> bytes:
    """A small but complete GGUF: scalars, a string, arrays (nested too) and two tensors."""
    kvs = [
        pack_kv("general.architecture", STRING, pack_string("llama")),
        pack_kv("llama.block_count", U32, struct.pack("<I", 1)),
        pack_kv("llama.rope.freq_base", GGUFValueType.FLOAT32, struct.pack("<f", 1e4)),
        pack_kv("t.strs", ARRAY, pack_array(STRING, 2, pack_string("ab") + pack_string("c"))),
        pack_kv("t.ints", ARRAY, pack_array(GGUFValueType.INT32, 3, struct.pack("<3i", 1, 2, 3))),
        pack_kv(
            "t.nested",
            ARRAY,
            pack_array(ARRAY, 2, pack_array(U32, 1, b"\1\0\0\0") + pack_array(U32, 0, b"")),
        ),
    ]
    tensors = [
        pack_tensor_info("token_embd.weight", (32, 1), F32, 0),
        pack_tensor_info("blk.0.attn_q.weight", (32,), F32, 128),
    ]
    return build_gguf(kvs, tensors, data_size=256)


def _read(tmp_path: Path, data: bytes, name: str = "bad.gguf") -> None:
    path = tmp_path / name
    path.write_bytes(data)
    read_gguf_header(path)


def _refused(tmp_path: Path, data: bytes, match: str) -> GgufError:
    started = time.perf_counter()
    tracemalloc.start()
    try:
        with pytest.raises(GgufError, match=match) as caught:
            _read(tmp_path, data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 2
    assert peak < 32 << 20, f"{peak:,} bytes allocated"
    return caught.value


def test_the_small_file_reads(tmp_path: Path) -> None:
    path = tmp_path / "ok.gguf"
    path.write_bytes(_small_file())
    header = read_gguf_header(path)
    assert header.metadata["t.nested"] == [[1], []]
    assert [t.n_bytes for t in header.tensors] == [128, 128]


def test_truncated_at_every_byte(tmp_path: Path) -> None:
    data = _small_file()
    header_end = len(data) - 256
    for cut in range(len(data)):
        with pytest.raises(GgufError) as caught:
            _read(tmp_path, data[:cut])
        message = str(caught.value)
        assert DAMAGED in message or "download is incomplete" in message, (cut, message)
        if cut < header_end - 32:  # inside the header (not just the padding or the data)
            assert "past the end" in message or "signature" in message, (cut, message)


def test_not_gguf_and_empty(tmp_path: Path) -> None:
    _refused(tmp_path, b"", "signature")
    _refused(tmp_path, b"<html>Not found</html>", "signature")


def test_huge_counts(tmp_path: Path) -> None:
    _refused(tmp_path, build_gguf([], n_kv=2**64 - 1), "metadata entries")
    _refused(tmp_path, build_gguf([], n_tensors=2**63), "tensors")
    # Within the caps, but more than the file could hold.
    _refused(tmp_path, build_gguf([], n_kv=60_000), "past the end")
    _refused(tmp_path, build_gguf([], n_tensors=100_000), "past the end")


def test_huge_string_lengths(tmp_path: Path) -> None:
    claim = pack_string("x", claimed=2**64 - 1)
    _refused(tmp_path, build_gguf([claim + b"rest"]), "claims")
    value = pack_kv("k", STRING, pack_string("abc", claimed=2**40))
    _refused(tmp_path, build_gguf([value]), "claims|past the end")
    strings = pack_array(STRING, 3, pack_string("a") + pack_string("b", claimed=2**62))
    _refused(tmp_path, build_gguf([pack_kv("k", ARRAY, strings)]), "claims")
    # A vocabulary too long to keep is skipped, not read: the bad length is still caught.
    vocab = [pack_string(f"t{i}") for i in range(5000)]
    vocab[3000] = pack_string("b", claimed=2**62)
    array = pack_array(STRING, len(vocab), b"".join(vocab))
    _refused(tmp_path, build_gguf([pack_kv("k", ARRAY, array)]), "past the end")


def test_huge_arrays(tmp_path: Path) -> None:
    for etype in (GGUFValueType.UINT8, GGUFValueType.UINT64, STRING):
        array = pack_array(etype, 2**61, b"\0" * 64)
        _refused(tmp_path, build_gguf([pack_kv("k", ARRAY, array)]), "past the end")


def test_a_long_string_array_of_zero_lengths_is_skipped_quickly(tmp_path: Path) -> None:
    # 500,000 empty strings: eight zero bytes each, the worst input for the fast scan.
    count = 500_000
    array = pack_array(STRING, count, b"\0" * (8 * count))
    data = build_gguf([pack_kv("k", ARRAY, array), pack_kv("z", U32, b"\7\0\0\0")])
    path = tmp_path / "zeros.gguf"
    path.write_bytes(data)
    started = time.perf_counter()
    header = read_gguf_header(path)
    assert time.perf_counter() - started < 3
    assert header.metadata["z"] == 7


def test_nested_array_bombs(tmp_path: Path) -> None:
    deep = pack_array(ARRAY, 1, pack_array(ARRAY, 1, pack_array(ARRAY, 1, pack_array(U32, 0, b""))))
    _refused(tmp_path, build_gguf([pack_kv("k", ARRAY, deep)]), "more than 3 deep")
    many = pack_array(ARRAY, 200_000, pack_array(U32, 0, b"") * 200_000)
    _refused(tmp_path, build_gguf([pack_kv("k", ARRAY, many)]), "arrays inside arrays")


def test_unknown_types(tmp_path: Path) -> None:
    _refused(tmp_path, build_gguf([pack_kv("k", 13, b"\0" * 8)]), "unknown value type")
    _refused(tmp_path, build_gguf([pack_kv("k", ARRAY, pack_array(99, 1, b"\0"))]), "unknown")
    tensor = pack_tensor_info("w", (32,), 31, 0)  # 31 was removed from GGML (Q4_0_4_4)
    error = _refused(tmp_path, build_gguf([], [tensor], data_size=1024), "tensor type")
    assert "update" in error.advice


def test_tensor_shapes_and_places(tmp_path: Path) -> None:
    def one(dims: tuple[int, ...], offset: int = 0, ggml_type: int = F32) -> bytes:
        return build_gguf([], [pack_tensor_info("w", dims, ggml_type, offset)], data_size=4096)

    _refused(tmp_path, one((1, 1, 1, 1, 1)), "5 dimensions")
    _refused(tmp_path, build_gguf([], [struct.pack("<Q", 1) + b"w" + b"\xff" * 4]), "dimensions")
    _refused(tmp_path, one((2**62, 2**62)), "impossible shape")
    _refused(tmp_path, one((2**64 - 1,)), "impossible shape")
    _refused(tmp_path, one((2**31, 2**31, 2**31, 2**31)), "impossible shape")
    _refused(tmp_path, one((4096,)), "past the end")  # 16 KiB of F32 in 4 KiB
    _refused(tmp_path, one((32,), offset=2**63), "past the end")
    _refused(tmp_path, one((32,), offset=4096), "past the end")
    _refused(tmp_path, one((32,), offset=4), "not a multiple of 32")
    _refused(tmp_path, one((33,), ggml_type=GGMLQuantizationType.Q4_K), "multiple of the 256")
    long_name = build_gguf([], [pack_tensor_info("w" * 64, (32,), F32, 0)], data_size=128)
    _refused(tmp_path, long_name, "longer than|more than the 63")


def test_duplicates_and_bad_alignment(tmp_path: Path) -> None:
    kv = pack_kv("k", U32, b"\1\0\0\0")
    _refused(tmp_path, build_gguf([kv, kv]), "appears twice")
    twice = [pack_tensor_info("w", (32,), F32, 0), pack_tensor_info("w", (32,), F32, 128)]
    _refused(tmp_path, build_gguf([], twice, data_size=256), "appears twice")
    for value in (0, 3, 48):
        align = pack_kv("general.alignment", U32, struct.pack("<I", value))
        _refused(tmp_path, build_gguf([align]), "alignment")
    text = pack_kv("general.alignment", STRING, pack_string("32"))
    _refused(tmp_path, build_gguf([text]), "alignment")


def test_messages_name_the_file_and_what_to_do(tmp_path: Path) -> None:
    error = _refused(tmp_path, b"GGUF", "past the end")
    assert str(tmp_path / "bad.gguf") in str(error)
    assert str(error).endswith("download it again.")
    assert error.status == 422
