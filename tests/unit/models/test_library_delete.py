"""Deleting a model frees what it says it frees, and never touches anything outside its place."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from roundhouse.api.library import LibraryList, LibraryModel
from roundhouse.core.errors import NotFoundError
from roundhouse.core.models.library.delete import UnsafeDeleteError
from roundhouse.core.models.library.places import LibraryPlaces
from roundhouse.core.models.library.service import LibraryService
from tests.unit.models.library_layouts import (
    COMMIT,
    OTHER_COMMIT,
    disk_bytes,
    hf_cache_repo,
    link_into_snapshot,
    write_gguf,
    write_safetensors_model,
)
from tests.unit.models.test_library_scan import QWEN_OLLAMA, FakeOllama


def listing(service: LibraryService) -> LibraryList:
    return asyncio.run(service.scan())


def named(service: LibraryService, name: str) -> LibraryModel:
    return next(m for m in listing(service).models if m.name == name)


def test_a_whole_hf_revision_goes_through_huggingface_hub(tmp_path: Path) -> None:
    cache = tmp_path / "кэш"
    folder = write_safetensors_model(tmp_path / "src")
    files = {p.name: p.read_bytes() for p in folder.iterdir()} | {"README.md": b"# card\n"}
    hf_cache_repo(cache, "org/model", files)
    service = LibraryService(lambda: LibraryPlaces(cache))
    model = named(service, "org/model")
    before = disk_bytes(cache)
    blobs = disk_bytes(cache / "models--org--model" / "blobs")  # all but the 40-byte ref

    plan = asyncio.run(service.delete(model.id, dry_run=True))
    assert not plan.executed and plan.freed_bytes == blobs
    assert disk_bytes(cache) == before

    done = asyncio.run(service.delete(model.id))
    assert done.executed and done.freed_bytes == blobs
    assert not (cache / "models--org--model").exists()
    assert listing(service).models == []


def test_one_quantization_of_an_hf_repo_keeps_the_others_and_shared_blobs(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    q4 = write_gguf(tmp_path / "w" / "m-Q4_K_M.gguf", weight_mb=3)
    q8 = write_gguf(tmp_path / "w" / "m-Q8_0.gguf", weight_mb=5)
    snapshot = hf_cache_repo(cache, "org/m-GGUF", {"m-Q4_K_M.gguf": q4, "m-Q8_0.gguf": q8})
    q4_blob = (snapshot / "m-Q4_K_M.gguf").resolve()
    q8_blob = (snapshot / "m-Q8_0.gguf").resolve()
    q8_size = q8_blob.stat().st_size
    # An older revision still points at the Q4_K_M blob.
    link_into_snapshot(cache, "org/m-GGUF", OTHER_COMMIT, "m-Q4_K_M.gguf", q4_blob)
    service = LibraryService(lambda: LibraryPlaces(cache))

    result = asyncio.run(service.delete(named(service, "org/m-GGUF Q8_0").id))
    assert result.freed_bytes == q8_size
    assert not q8_blob.exists() and not (snapshot / "m-Q8_0.gguf").exists()
    assert q4_blob.exists() and (snapshot / "m-Q4_K_M.gguf").exists()

    # The current revision's Q4_K_M shares its blob with the old one: the link goes, the
    # blob stays, nothing is freed. The revision then holds no model: it is removed whole.
    current = named(service, "org/m-GGUF Q4_K_M")
    result = asyncio.run(service.delete(current.id))
    assert result.freed_bytes == 0
    assert q4_blob.exists()
    assert not (cache / "models--org--m-GGUF" / "snapshots" / COMMIT).exists()
    assert [m.name for m in listing(service).models] == [f"org/m-GGUF Q4_K_M @{OTHER_COMMIT[:7]}"]


def test_folder_files_split_shards_and_empty_folders(tmp_path: Path) -> None:
    root = tmp_path / "models"
    first = write_gguf(root / "big" / "x-Q2_K-00001-of-00002.gguf", split=(1, 2), weight_mb=2)
    second = write_gguf(root / "big" / "x-Q2_K-00002-of-00002.gguf", split=(2, 2), weight_mb=1)
    keep = write_gguf(root / "other-Q4_0.gguf")
    service = LibraryService(lambda: LibraryPlaces(tmp_path / "cache", (root,)))
    sizes = first.stat().st_size + second.stat().st_size

    result = asyncio.run(service.delete(named(service, "x-Q2_K").id))
    assert result.freed_bytes == sizes
    assert sorted(result.removed) == sorted([str(first), str(second)])
    assert not (root / "big").exists()  # emptied, so removed
    assert root.is_dir() and keep.exists()  # the library folder itself stays


def test_a_hard_linked_file_frees_nothing_and_a_link_only_goes_itself(tmp_path: Path) -> None:
    root = tmp_path / "models"
    original = write_gguf(tmp_path / "elsewhere" / "orig-Q4_0.gguf", weight_mb=1)
    root.mkdir()
    os.link(original, root / "twin-Q4_0.gguf")
    (root / "pointer-Q4_0.gguf").symlink_to(original)
    service = LibraryService(lambda: LibraryPlaces(tmp_path / "cache", (root,)))

    twin = asyncio.run(service.delete(named(service, "twin-Q4_0").id))
    assert twin.freed_bytes == 0  # the other name keeps the data
    pointer = asyncio.run(service.delete(named(service, "pointer-Q4_0").id))
    assert pointer.freed_bytes == 0
    assert pointer.note is not None and "Links were removed" in pointer.note
    assert original.exists() and not (root / "pointer-Q4_0.gguf").exists()


def test_a_safetensors_folder_and_lmstudio_files(tmp_path: Path) -> None:
    lmstudio = tmp_path / ".lmstudio" / "models"
    model_dir = write_safetensors_model(lmstudio / "org" / "tiny")
    gguf = write_gguf(lmstudio / "pub" / "repo-GGUF" / "repo-Q4_K_M.gguf", weight_mb=1)
    service = LibraryService(lambda: LibraryPlaces(tmp_path / "cache", lmstudio=(lmstudio,)))
    expected = disk_bytes(model_dir)
    gguf_size = gguf.stat().st_size

    result = asyncio.run(service.delete(named(service, "org/tiny").id))
    assert result.freed_bytes == expected
    assert not (lmstudio / "org").exists()
    result = asyncio.run(service.delete(named(service, "pub/repo-GGUF Q4_K_M").id))
    assert result.freed_bytes == gguf_size
    assert not gguf.exists() and not (lmstudio / "pub").exists()
    assert lmstudio.is_dir()


def test_files_reached_through_a_linked_folder_outside_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    victim = write_gguf(outside / "precious-Q4_0.gguf")
    root = tmp_path / "models"
    root.mkdir()
    (root / "linked").symlink_to(outside, target_is_directory=True)
    service = LibraryService(lambda: LibraryPlaces(tmp_path / "cache", (root,)))
    model = named(service, "precious-Q4_0")
    with pytest.raises(UnsafeDeleteError, match="is not inside"):
        asyncio.run(service.delete(model.id))
    assert victim.exists()


def test_ollama_models_are_deleted_through_its_api(tmp_path: Path) -> None:
    ollama = FakeOllama([QWEN_OLLAMA])
    service = LibraryService(lambda: LibraryPlaces(tmp_path / "cache"), ollama=ollama.access())
    model = named(service, "qwen2.5:7b")
    dry = asyncio.run(service.delete(model.id, dry_run=True))
    assert (dry.executed, ollama.deleted) == (False, [])
    done = asyncio.run(service.delete(model.id))
    assert (done.executed, done.freed_bytes, ollama.deleted) == (
        True,
        QWEN_OLLAMA.size,
        ["qwen2.5:7b"],
    )
    assert done.note is not None and "shares layers" in done.note
    assert listing(service).models == []


def test_a_model_that_vanished_meanwhile_is_not_found(tmp_path: Path) -> None:
    root = tmp_path / "models"
    write_gguf(root / "gone-Q4_0.gguf")
    service = LibraryService(lambda: LibraryPlaces(tmp_path / "cache", (root,)))
    model = named(service, "gone-Q4_0")
    shutil.rmtree(root)
    with pytest.raises(NotFoundError, match="No model with id"):
        asyncio.run(service.delete(model.id))
