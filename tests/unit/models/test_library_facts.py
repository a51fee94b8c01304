"""Header facts are read once per file version (memory and disk cache); bad files are listed
with an error, never a crash."""

from __future__ import annotations

import asyncio
import json
import os
import struct
from pathlib import Path

from roundhouse.core.models.library.facts import FactsCache, ModelFacts
from roundhouse.core.models.library.gguf_probe import probe_gguf
from roundhouse.core.models.library.places import LibraryPlaces
from roundhouse.core.models.library.service import LibraryService
from tests.unit.models.library_layouts import write_gguf, write_safetensors, write_safetensors_model


class CountingProbe:
    def __init__(self) -> None:
        self.calls: list[Path] = []

    def __call__(self, path: Path) -> ModelFacts:
        self.calls.append(path)
        return probe_gguf(path)


def test_warm_scans_read_no_headers_and_changed_files_are_read_again(tmp_path: Path) -> None:
    root = tmp_path / "models"
    a = write_gguf(root / "a-Q4_0.gguf")
    write_gguf(root / "b-Q8_0.gguf")
    probe = CountingProbe()
    places = LibraryPlaces(tmp_path / "cache", (root,))
    cache_file = tmp_path / "data" / "library-facts.json"
    service = LibraryService(lambda: places, gguf_probe=probe, cache_file=cache_file)
    asyncio.run(service.scan())
    assert len(probe.calls) == 2
    asyncio.run(service.scan())
    assert len(probe.calls) == 2

    write_gguf(a, arch="qwen3", layers=3)  # rewritten: another size and mtime
    listing = asyncio.run(service.scan())
    assert probe.calls[2:] == [a]
    assert {m.name: m.architecture for m in listing.models}["a-Q4_0"] == "qwen3"

    # A new daemon reads the cache file: still no header read.
    fresh = CountingProbe()
    restarted = LibraryService(lambda: places, gguf_probe=fresh, cache_file=cache_file)
    assert asyncio.run(restarted.scan()).models == listing.models
    assert fresh.calls == []


def test_a_corrupt_cache_file_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "facts.json"
    for text in ("{not json", "[]", '{"version": 1, "entries": {"k": {"stamp": [[1]]}}}'):
        path.write_text(text, encoding="utf-8")
        assert len(FactsCache(path)) == 0
    entry = {"stamp": [[1, 2]], "facts": {"architecture": 5}}
    path.write_text(json.dumps({"version": 1, "entries": {"k": entry}}), encoding="utf-8")
    assert len(FactsCache(path)) == 0
    good = FactsCache(path)
    good.put("k", ((1, 2),), ModelFacts(architecture="llama", parameter_count=7))
    good.save()
    assert FactsCache(path).get("k", ((1, 2),)) == ModelFacts(
        architecture="llama", parameter_count=7
    )
    assert FactsCache(path).get("k", ((1, 3),)) is None


def test_a_probe_that_breaks_costs_one_entry_not_the_scan(tmp_path: Path) -> None:
    root = tmp_path / "models"
    write_gguf(root / "a-Q4_0.gguf")
    write_gguf(root / "b-Q4_0.gguf")

    def probe(path: Path) -> ModelFacts:
        if path.name.startswith("a"):
            raise IndexError("a bug in a reader")
        return probe_gguf(path)

    places = LibraryPlaces(tmp_path / "cache", (root,))
    models = asyncio.run(LibraryService(lambda: places, gguf_probe=probe).scan()).models
    errors = {m.name: m.error for m in models}
    assert errors["b-Q4_0"] is None
    assert errors["a-Q4_0"] == "The file cannot be read as GGUF (IndexError)."


def test_hostile_safetensors_headers_and_missing_shards(tmp_path: Path) -> None:
    root = tmp_path / "models"
    huge = write_safetensors_model(root / "huge-header")
    with (huge / "model.safetensors").open("r+b") as f:
        f.write(struct.pack("<Q", 2**62))
    bad_shape = write_safetensors_model(root / "bad-shape")
    write_safetensors(bad_shape / "model.safetensors", {"w": ("F32", [2, 2])})
    raw = (bad_shape / "model.safetensors").read_bytes().replace(b"[2, 2]", b'"22"  ')
    (bad_shape / "model.safetensors").write_bytes(raw)
    partial = write_safetensors_model(root / "partial")
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model.safetensors"}}
    (partial / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    broken_config = write_safetensors_model(root / "broken-config")
    (broken_config / "config.json").write_text("{", encoding="utf-8")

    places = LibraryPlaces(tmp_path / "cache", (root,))
    models = {m.name: m for m in asyncio.run(LibraryService(lambda: places).scan()).models}
    assert "claims a 4,611,686,018,427,387,904-byte header" in (models["huge-header"].error or "")
    assert "has no valid shape" in (models["bad-shape"].error or "")
    assert "1 of its 2 weight files are missing" in (models["partial"].error or "")
    assert models["partial"].parameter_count == 1000 + 64 * 16
    assert "config.json cannot be read" in (models["broken-config"].error or "")


def test_mlx_quantized_parameters_count_packed_weights(tmp_path: Path) -> None:
    folder = tmp_path / "models" / "q4"
    folder.mkdir(parents=True)
    config = {"model_type": "llama", "quantization": {"bits": 4, "group_size": 64}}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    write_safetensors(
        folder / "model.safetensors",
        {
            "w.weight": ("U32", [128, 8]),  # 128 x 64 four-bit values
            "w.scales": ("BF16", [128, 1]),
            "w.biases": ("BF16", [128, 1]),
            "norm.weight": ("BF16", [64]),
        },
    )
    places = LibraryPlaces(tmp_path / "cache", (tmp_path / "models",))
    (model,) = asyncio.run(LibraryService(lambda: places).scan()).models
    assert (model.parameter_count, model.quantization) == (128 * 64 + 64, "4bit")
    assert os.fspath(folder) == model.path
