"""The library lists a new GGUF from its first metadata entries and reads the whole header
after, in the background: the exact count and a file cut short show at the next scan."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from roundhouse.api.library import LibraryList
from roundhouse.core.knowledge.gguf import GgufError, read_gguf_header, read_gguf_metadata
from roundhouse.core.models.library.gguf_probe import probe_gguf, probe_gguf_quick
from roundhouse.core.models.library.places import LibraryPlaces
from roundhouse.core.models.library.service import LibraryService
from tests.fixtures.models.gguf_headers import LLAMA_3_1_8B, QWEN_3_30B_A3B, write_known_gguf
from tests.unit.models.library_layouts import gguf_parameters, write_gguf


def test_the_quick_read_stops_before_the_tokenizer(tmp_path: Path) -> None:
    path = write_known_gguf(LLAMA_3_1_8B, tmp_path)
    header = read_gguf_metadata(path, lambda md: "llama.context_length" in md)
    assert not header.complete and header.tensors == ()
    assert "tokenizer.ggml.tokens" not in header.metadata
    assert header.architecture == "llama"

    quick, whole = probe_gguf_quick(path), probe_gguf(path)
    assert not quick.checked and whole.checked
    assert quick.parameter_label == whole.parameter_label == "8B"
    assert quick.parameter_count is None and whole.parameter_count is not None
    for field in ("architecture", "name", "quantization", "context_length"):
        assert getattr(quick, field) == getattr(whole, field), field


def test_a_file_without_the_listing_keys_gets_the_whole_read(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "tiny.gguf")  # no general.size_label
    quick = probe_gguf_quick(path)
    assert quick.checked and quick.parameter_count == gguf_parameters()
    assert quick == probe_gguf(path)


def test_a_quick_read_still_refuses_a_hostile_start(tmp_path: Path) -> None:
    path = write_known_gguf(LLAMA_3_1_8B, tmp_path)
    with path.open("rb") as f:
        data = bytearray(f.read(4096))
    data[16:24] = (1 << 40).to_bytes(8, "little")  # the metadata count
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(bytes(data))
    with pytest.raises(GgufError, match="metadata entries"):
        read_gguf_metadata(bad, lambda md: False)


def _settled(service: LibraryService, within_s: float = 20.0) -> LibraryList:
    """Scan until the background check has read every header."""

    async def run() -> LibraryList:
        deadline = time.monotonic() + within_s
        while True:
            listing = await service.scan()
            if listing.checking == 0:
                await service.close()
                return listing
            assert time.monotonic() < deadline, "the background check did not finish"
            await asyncio.sleep(0.05)

    return asyncio.run(run())


def test_first_scan_lists_at_once_and_the_check_fills_in_exact_facts(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    llama = write_known_gguf(LLAMA_3_1_8B, folder)
    qwen = write_known_gguf(QWEN_3_30B_A3B, folder)
    cut = folder / "cut-short-Q4_K_M.gguf"
    with llama.open("rb") as f:
        cut.write_bytes(f.read(64 << 20))  # a copy that stopped early: a header, no weights
    places = LibraryPlaces(tmp_path / "hub", (folder,), imported=tmp_path / "imported")
    cache_file = tmp_path / "facts.json"

    async def first() -> LibraryList:
        service = LibraryService(lambda: places, cache_file=cache_file)
        listing = await service.scan()
        await service.close()  # stops the check: the next service finishes it
        return listing

    listing = asyncio.run(first())
    assert listing.checking == 3
    models = {m.path: m for m in listing.models}
    assert models[str(qwen)].parameter_label == "30B-A3B"
    assert models[str(llama)].parameter_count is None and models[str(cut)].error is None

    settled = _settled(LibraryService(lambda: places, cache_file=cache_file))
    models = {m.path: m for m in settled.models}
    assert models[str(llama)].parameter_count == read_gguf_header_count(llama)
    assert models[str(llama)].parameter_label == "8B"
    assert models[str(cut)].error is not None and "past the end" in models[str(cut)].error

    # What the check read is in the cache file: a new daemon has nothing left to read.
    again = asyncio.run(LibraryService(lambda: places, cache_file=cache_file).scan())
    assert again.checking == 0
    assert [m.model_dump() for m in again.models] == [m.model_dump() for m in settled.models]


def test_a_file_changed_during_the_check_is_read_again(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    path = write_known_gguf(LLAMA_3_1_8B, folder.mkdir() or folder)
    places = LibraryPlaces(tmp_path / "hub", (folder,), imported=tmp_path / "imported")
    service = LibraryService(lambda: places)

    async def run() -> LibraryList:
        listing = await service.scan()
        assert listing.checking == 1
        # Replaced by another model before the check gets to it.
        (tmp_path / "other").mkdir()
        write_known_gguf(QWEN_3_30B_A3B, tmp_path / "other")
        (tmp_path / "other" / QWEN_3_30B_A3B.file_name).replace(path)
        deadline = time.monotonic() + 20
        while (listing := await service.scan()).checking:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        await service.close()
        return listing

    [model] = asyncio.run(run()).models
    assert model.parameter_label == "30B-A3B" and model.architecture == "qwen3moe"
    assert model.parameter_count == read_gguf_header_count(path)


def read_gguf_header_count(path: Path) -> int:
    return sum(t.n_elements for t in read_gguf_header(path).tensors)
