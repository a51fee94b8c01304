"""The GGUF header reader on real files: gguf.GGUFWriter output, compared with GGUFReader."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType, GGUFValueType

from roundhouse.core.errors import NotFoundError
from roundhouse.core.knowledge.gguf import ArrayInfo, GgufError, read_gguf_header
from roundhouse.core.knowledge.gguf.values import MAX_LIST
from tests.fixtures.models.gguf_headers import (
    KNOWN_MODELS,
    build_gguf,
    pack_kv,
    pack_string,
    pack_tensor_info,
    write_known_gguf,
)
from tests.fixtures.models.tiny_llama import write_tiny_llama_gguf


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_llama_gguf(tmp_path_factory.mktemp("tiny") / "tiny.gguf")


def _plain(value: object) -> object:
    """GGUFReader's view of a value as plain Python, for comparison."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return pytest.approx(value, rel=1e-6)
    return value


def test_tiny_model_matches_gguf_reader(tiny: Path) -> None:
    header = read_gguf_header(tiny)
    reference = gguf.GGUFReader(os.fspath(tiny))
    assert header.version == 3
    assert header.file_size == tiny.stat().st_size
    assert header.data_offset == reference.data_offset
    assert header.alignment == reference.alignment == 32
    assert list(header.metadata) == [k for k in reference.fields if not k.startswith("GGUF.")]
    for key, field in reference.fields.items():
        if key.startswith("GGUF."):
            continue
        assert header.value_types[key] == field.types[0], key
        mine = header.metadata[key]
        if isinstance(mine, ArrayInfo):
            assert mine.length == len(field.data), key
        else:
            assert mine == _plain(field.contents()), key
    assert [t.name for t in header.tensors] == [t.name for t in reference.tensors]
    for mine, theirs in zip(header.tensors, reference.tensors, strict=True):
        assert mine.shape == tuple(int(d) for d in theirs.shape)
        assert mine.type == theirs.tensor_type
        assert mine.n_elements == theirs.n_elements
        assert mine.n_bytes == theirs.n_bytes
        assert header.data_offset + mine.offset == theirs.data_offset
    assert header.tensor_bytes == sum(t.n_bytes for t in reference.tensors)


def test_every_value_type_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "types.gguf"
    writer = gguf.GGUFWriter(os.fspath(path), arch="test")
    writer.add_uint8("t.u8", 250)
    writer.add_int8("t.i8", -120)
    writer.add_uint16("t.u16", 65000)
    writer.add_int16("t.i16", -32000)
    writer.add_uint32("t.u32", 4_000_000_000)
    writer.add_int32("t.i32", -2_000_000_000)
    writer.add_float32("t.f32", 1.5)
    writer.add_bool("t.bool", True)
    writer.add_string("t.str", "héllo 模型")
    writer.add_uint64("t.u64", 2**63 + 5)
    writer.add_int64("t.i64", -(2**62))
    writer.add_float64("t.f64", 2.25)
    writer.add_array("t.ints", [1, 2, 3])
    writer.add_array("t.bools", [True, False, True])
    writer.add_array("t.strs", ["a", "", "ccc"])
    writer.add_array("t.nested", [[1, 2], [3]])
    writer.add_array("t.long_ints", list(range(MAX_LIST + 1)))
    writer.add_array("t.long_strs", [f"s{i}" for i in range(5000)])
    writer.add_tensor("w", np.ones((4, 32), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    meta = read_gguf_header(path).metadata
    assert meta["general.architecture"] == "test"
    assert (meta["t.u8"], meta["t.i8"], meta["t.u16"], meta["t.i16"]) == (250, -120, 65000, -32000)
    assert (meta["t.u32"], meta["t.i32"]) == (4_000_000_000, -2_000_000_000)
    assert meta["t.f32"] == 1.5 and meta["t.f64"] == 2.25
    assert meta["t.bool"] is True
    assert meta["t.str"] == "héllo 模型"
    assert (meta["t.u64"], meta["t.i64"]) == (2**63 + 5, -(2**62))
    assert meta["t.ints"] == [1, 2, 3]
    assert meta["t.bools"] == [True, False, True]
    assert meta["t.strs"] == ["a", "", "ccc"]
    assert meta["t.nested"] == [[1, 2], [3]]
    assert meta["t.long_ints"] == ArrayInfo(GGUFValueType.INT32, MAX_LIST + 1)
    assert meta["t.long_strs"] == ArrayInfo(GGUFValueType.STRING, 5000)


def test_string_arrays_with_long_and_odd_strings_are_skipped_exactly(tmp_path: Path) -> None:
    # Long strings (past 255 bytes), empty ones and zero bytes break the fast scan's
    # chain: the value after the array must still be read at exactly the right place.
    rng = np.random.default_rng(7)
    strings: list[bytes] = []
    for i in range(20_000):
        kind = (i + 50) % 97  # the first string is an ordinary one
        if kind == 0:
            strings.append(b"x" * int(rng.integers(256, 5000)))
        elif kind == 1:
            strings.append(b"")
        elif kind == 2:
            strings.append(b"\0" * 16)  # seven zeros in a row: a false candidate
        else:
            strings.append(bytes(rng.integers(1, 256, int(rng.integers(1, 20)), dtype=np.uint8)))
    payload = struct.pack("<IQ", GGUFValueType.STRING, len(strings))
    payload += b"".join(pack_string(s) for s in strings)
    kvs = [
        pack_kv("a.tokens", GGUFValueType.ARRAY, payload),
        pack_kv("a.after", GGUFValueType.UINT32, struct.pack("<I", 123456)),
    ]
    path = tmp_path / "odd.gguf"
    path.write_bytes(build_gguf(kvs))
    header = read_gguf_header(path)
    assert header.metadata["a.tokens"] == ArrayInfo(GGUFValueType.STRING, len(strings))
    assert header.metadata["a.after"] == 123456


def test_version_2_is_read_and_alignment_honoured(tmp_path: Path) -> None:
    kvs = [pack_kv("general.alignment", GGUFValueType.UINT32, struct.pack("<I", 64))]
    tensors = [pack_tensor_info("w", (32, 2), GGMLQuantizationType.F32, 0)]
    path = tmp_path / "v2.gguf"
    path.write_bytes(build_gguf(kvs, tensors, version=2, alignment=64, data_size=256))
    header = read_gguf_header(path)
    assert header.version == 2
    assert header.alignment == 64
    assert header.data_offset % 64 == 0
    assert header.tensors[0].n_bytes == 256


@pytest.mark.parametrize(
    ("version", "words"),
    [
        (struct.unpack("<I", struct.pack(">I", 3))[0], "big-endian"),
        (1, "version 1"),
        (4, "version 4"),
    ],
)
def test_other_versions_are_refused_in_words(tmp_path: Path, version: int, words: str) -> None:
    path = tmp_path / "other.gguf"
    path.write_bytes(build_gguf([], version=version))
    with pytest.raises(GgufError, match=words) as caught:
        read_gguf_header(path)
    assert str(path) in str(caught.value)


def test_a_missing_file_or_a_folder_is_said_so(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no file"):
        read_gguf_header(tmp_path / "nothing.gguf")
    with pytest.raises(GgufError, match="folder"):
        read_gguf_header(tmp_path)


@pytest.mark.parametrize("key", sorted(KNOWN_MODELS))
def test_known_models_land_on_their_published_size(tmp_path: Path, key: str) -> None:
    model = KNOWN_MODELS[key]
    header = read_gguf_header(write_known_gguf(model, tmp_path, tokenizer=False))
    assert abs(header.file_size - model.published_bytes) < 0.005 * model.published_bytes
    # Only the header takes disk space: the weights are a hole.
    assert header.data_offset + header.tensor_bytes <= header.file_size
    assert header.architecture == model.arch
