"""The library lists models from the HF cache, the user's folders, LM Studio and Ollama."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from huggingface_hub import hf_hub_download, snapshot_download

from roundhouse.api.engines import EngineId, ModelFormat
from roundhouse.api.library import LibraryList, LibraryModel, LibrarySource
from roundhouse.api.ollama import OllamaModel, OllamaModelDetails
from roundhouse.core.engines.ollama_api import OllamaNotRunningError
from roundhouse.core.errors import NotFoundError
from roundhouse.core.models.library.ollama_source import OllamaAccess
from roundhouse.core.models.library.places import LibraryPlaces, library_places
from roundhouse.core.models.library.service import LibraryService
from tests.fakes.hub.build import GGUF_REPO, HF_REPO, MLX_REPO
from tests.unit.models.library_layouts import (
    COMMIT,
    gguf_parameters,
    hf_cache_repo,
    write_gguf,
    write_safetensors_model,
)


def scan(service: LibraryService) -> LibraryList:
    return asyncio.run(service.scan())


def by_name(listing: LibraryList) -> dict[str, LibraryModel]:
    return {m.name: m for m in listing.models}


def test_hf_cache_filled_by_huggingface_hub(fake_hub_url: str, tmp_path: Path) -> None:
    cache = tmp_path / "кэш 缓存"
    for name in (
        "tiny-llama-Q4_K_M.gguf",
        "tiny-llama-F16-00001-of-00002.gguf",
        "tiny-llama-F16-00002-of-00002.gguf",
    ):
        hf_hub_download(GGUF_REPO, name, cache_dir=cache, endpoint=fake_hub_url, token=False)
    snapshot_download(MLX_REPO, cache_dir=cache, endpoint=fake_hub_url, token=False)
    snapshot_download(HF_REPO, cache_dir=cache, endpoint=fake_hub_url, token=False)

    listing = scan(LibraryService(lambda: LibraryPlaces(hub_cache=cache)))
    models = by_name(listing)
    assert sorted(models) == sorted([f"{GGUF_REPO} Q4_K_M", f"{GGUF_REPO} F16", MLX_REPO, HF_REPO])
    q4 = models[f"{GGUF_REPO} Q4_K_M"]
    assert (q4.source, q4.format, q4.repo, q4.refs) == (
        LibrarySource.HF_CACHE,
        ModelFormat.GGUF,
        GGUF_REPO,
        ["main"],
    )
    assert (q4.architecture, q4.quantization, q4.context_length) == ("llama", "Q4_K_M", 2048)
    assert q4.engines == [EngineId.LLAMA_CPP, EngineId.OLLAMA]
    assert q4.revision is not None and len(q4.revision) == 40
    assert q4.path is not None and Path(q4.path).is_file()
    assert q4.size_bytes == Path(q4.path).stat().st_size
    f16 = models[f"{GGUF_REPO} F16"]
    assert len(f16.paths) == 2 and f16.path == f16.paths[0]
    assert f16.paths[0].endswith("-00001-of-00002.gguf")
    assert f16.size_bytes == sum(Path(p).stat().st_size for p in f16.paths)
    assert f16.parameter_count == q4.parameter_count  # shards summed
    assert f16.error is None
    mlx = models[MLX_REPO]
    assert (mlx.format, mlx.quantization, mlx.engines) == (ModelFormat.MLX, "4bit", [EngineId.MLX])
    assert mlx.path is not None and Path(mlx.path, "config.json").is_file()
    plain = models[HF_REPO]
    assert plain.format is ModelFormat.SAFETENSORS
    assert plain.engines == [EngineId.VLLM, EngineId.SGLANG]
    assert plain.parameter_count == q4.parameter_count  # the same tiny model
    assert (plain.architecture, plain.context_length) == ("llama", 2048)
    (place,) = listing.places
    assert (place.source, place.available, place.models) == (LibrarySource.HF_CACHE, True, 4)


def test_safetensors_gets_mlx_on_apple_silicon_when_mlx_knows_the_arch(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    write_safetensors_model(folder / "llama-ish")
    write_safetensors_model(folder / "odd", {"model_type": "no-such-arch"})
    places = LibraryPlaces(hub_cache=tmp_path / "none", folders=(folder,))
    models = by_name(scan(LibraryService(lambda: places, apple_silicon=True)))
    assert EngineId.MLX in models["llama-ish"].engines
    assert EngineId.MLX not in models["odd"].engines
    assert models["llama-ish"].parameter_count == 1000 + 64 * 16
    assert (models["llama-ish"].quantization, models["llama-ish"].context_length) == ("BF16", 8192)


def test_user_folders_with_non_ascii_names_bad_files_and_loops(tmp_path: Path) -> None:
    folder = tmp_path / "модели 模型"
    good = write_gguf(folder / "Qwen 千问" / "qwen3-0.6b-Q8_0.gguf", arch="qwen3", context=40960)
    write_gguf(folder / "vision" / "gemma-3-4b-it-Q4_K_M.gguf", arch="gemma3")
    write_gguf(folder / "vision" / "mmproj-gemma-3-4b-F16.gguf", arch="clip")
    (folder / "junk.gguf").write_bytes(b"this is not a model at all")
    (folder / "truncated-Q4_0.gguf").write_bytes(b"GGUF\x03\x00\x00\x00\xff\xff")
    write_gguf(folder / "big" / "llama-70b-Q2_K-00001-of-00003.gguf", split=(1, 3))
    write_gguf(folder / "big" / "llama-70b-Q2_K-00002-of-00003.gguf", split=(2, 3))
    (folder / "loop").symlink_to(folder)  # a folder containing itself
    (folder / "dangling.gguf").symlink_to(tmp_path / "gone.gguf")
    (folder / ".hidden").mkdir()
    write_gguf(folder / ".hidden" / "secret-Q4_0.gguf")

    listing = scan(LibraryService(lambda: LibraryPlaces(tmp_path / "cache", (folder,))))
    models = by_name(listing)
    assert sorted(models) == [
        "gemma-3-4b-it-Q4_K_M",
        "junk",
        "llama-70b-Q2_K",
        "qwen3-0.6b-Q8_0",
        "truncated-Q4_0",
    ]
    qwen = models["qwen3-0.6b-Q8_0"]
    assert (qwen.source, qwen.path, qwen.error) == (LibrarySource.FOLDER, str(good), None)
    assert (qwen.architecture, qwen.context_length) == ("qwen3", 40960)
    assert qwen.quantization == "Q4_K_M"  # the header's file type wins over the name
    assert qwen.parameter_count == gguf_parameters()
    gemma = models["gemma-3-4b-it-Q4_K_M"]
    assert gemma.projector is not None and gemma.projector.endswith("mmproj-gemma-3-4b-F16.gguf")
    assert models["junk"].error and "GGUF" in models["junk"].error
    assert models["truncated-Q4_0"].error
    assert models["truncated-Q4_0"].quantization == "Q4_0"  # from the name, when the header fails
    split = models["llama-70b-Q2_K"]
    assert split.error is not None and "Only 2 of its 3 parts" in split.error
    (place,) = [p for p in listing.places if p.source is LibrarySource.FOLDER]
    assert place.available and place.models == 5
    assert place.error is not None and "dangling.gguf: a broken link" in place.error
    json.loads(listing.model_dump_json())  # every name travels as JSON


def test_names_that_are_not_utf8_are_skipped_with_a_note(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    write_gguf(folder / "ok-Q4_0.gguf")
    raw = os.fsencode(folder) + b"/bad-\xff-Q4_0.gguf"
    write_gguf(Path(os.fsdecode(raw)))
    listing = scan(LibraryService(lambda: LibraryPlaces(tmp_path / "cache", (folder,))))
    assert [m.name for m in listing.models] == ["ok-Q4_0"]
    place = next(p for p in listing.places if p.source is LibrarySource.FOLDER)
    assert place.error is not None and "not valid UTF-8" in place.error
    json.loads(listing.model_dump_json())


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder")
def test_unreadable_folders_are_noted(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    write_gguf(folder / "ok-Q4_0.gguf")
    locked = folder / "locked"
    write_gguf(locked / "hidden-Q4_0.gguf")
    locked.chmod(0)
    try:
        listing = scan(LibraryService(lambda: LibraryPlaces(tmp_path / "cache", (folder,))))
    finally:
        locked.chmod(0o755)
    assert [m.name for m in listing.models] == ["ok-Q4_0"]
    assert any(p.error and "locked" in p.error for p in listing.places)


def test_missing_places_are_reported_not_fatal(tmp_path: Path) -> None:
    places = LibraryPlaces(tmp_path / "no-cache", (tmp_path / "no-folder",))
    listing = scan(LibraryService(lambda: places))
    assert listing.models == []
    assert [(p.source, p.available) for p in listing.places] == [
        (LibrarySource.HF_CACHE, False),
        (LibrarySource.FOLDER, False),
    ]


def test_lmstudio_folders_and_its_settings(tmp_path: Path) -> None:
    home = tmp_path / "home"
    new, old = home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"
    write_gguf(new / "lmstudio-community" / "Qwen3-8B-GGUF" / "Qwen3-8B-Q4_K_M.gguf")
    write_gguf(old / "TheBloke" / "Old-GGUF" / "old.Q5_K_S.gguf")
    custom = tmp_path / "Модели LM"
    write_gguf(custom / "bartowski" / "gemma-GGUF" / "gemma-Q6_K.gguf", arch="gemma2")
    mlx_config = {"model_type": "qwen3", "quantization": {"bits": 4, "group_size": 64}}
    write_safetensors_model(custom / "mlx-community" / "Qwen3-4B-4bit", mlx_config)
    (home / ".lmstudio" / "settings.json").write_text(
        json.dumps({"downloadsFolder": str(custom)}), encoding="utf-8"
    )
    places = library_places(None, [], tmp_path / "data", home=home)
    assert places.lmstudio == (custom, new, old)
    places = LibraryPlaces(tmp_path / "cache", lmstudio=places.lmstudio)
    models = by_name(scan(LibraryService(lambda: places)))
    assert sorted(models) == [
        "TheBloke/Old-GGUF Q5_K_S",
        "bartowski/gemma-GGUF Q6_K",
        "lmstudio-community/Qwen3-8B-GGUF Q4_K_M",
        "mlx-community/Qwen3-4B-4bit",
    ]
    qwen = models["lmstudio-community/Qwen3-8B-GGUF Q4_K_M"]
    assert (qwen.source, qwen.repo) == (LibrarySource.LMSTUDIO, "lmstudio-community/Qwen3-8B-GGUF")
    assert models["mlx-community/Qwen3-4B-4bit"].format is ModelFormat.MLX


class FakeOllama:
    def __init__(self, models: Sequence[OllamaModel] = (), error: Exception | None = None) -> None:
        self.models = list(models)
        self.error = error
        self.deleted: list[str] = []

    async def list_models(self) -> Sequence[OllamaModel]:
        if self.error is not None:
            raise self.error
        return self.models

    async def delete_model(self, name: str) -> None:
        self.deleted.append(name)
        self.models = [m for m in self.models if m.name != name]

    def access(self) -> OllamaAccess:
        return OllamaAccess("http://127.0.0.1:11434", self.list_models, self.delete_model)


QWEN_OLLAMA = OllamaModel(
    name="qwen2.5:7b",
    size=4_683_087_332,
    digest="sha256:" + "a" * 64,
    details=OllamaModelDetails(
        format="gguf", family="qwen2", parameter_size="7.6B", quantization_level="Q4_K_M"
    ),
)


def test_ollama_models_come_through_its_api(tmp_path: Path) -> None:
    ollama = FakeOllama([QWEN_OLLAMA])
    places = LibraryPlaces(tmp_path / "cache")
    listing = scan(LibraryService(lambda: places, ollama=ollama.access()))
    (model,) = listing.models
    assert (model.name, model.source, model.format) == (
        "qwen2.5:7b",
        LibrarySource.OLLAMA,
        ModelFormat.OLLAMA,
    )
    assert (model.architecture, model.parameter_count, model.quantization) == (
        "qwen2",
        7_600_000_000,
        "Q4_K_M",
    )
    assert (model.size_bytes, model.engines, model.path) == (4_683_087_332, [EngineId.OLLAMA], None)
    place = listing.places[-1]
    assert (place.source, place.available, place.models) == (LibrarySource.OLLAMA, True, 1)


def test_an_ollama_that_is_down_or_hangs_is_one_line_not_an_error(tmp_path: Path) -> None:
    write_gguf(tmp_path / "models" / "a-Q4_0.gguf")
    places = LibraryPlaces(tmp_path / "cache", (tmp_path / "models",))
    down = FakeOllama(error=OllamaNotRunningError("Ollama is not running at 127.0.0.1:11434."))
    listing = scan(LibraryService(lambda: places, ollama=down.access()))
    assert [m.name for m in listing.models] == ["a-Q4_0"]
    assert listing.places[-1].available is False
    assert "not running" in (listing.places[-1].error or "")

    async def hang() -> Sequence[OllamaModel]:
        await asyncio.sleep(30)
        return []

    stuck = OllamaAccess("http://127.0.0.1:11434", hang, down.delete_model)
    service = LibraryService(lambda: places, ollama=stuck, ollama_timeout_s=0.2)
    listing = scan(service)
    assert [m.name for m in listing.models] == ["a-Q4_0"]
    assert "did not answer within 0.2 s" in (listing.places[-1].error or "")


def test_ids_are_stable_and_lookups_work(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    hf_cache_repo(cache, "org/m-GGUF", {"m-Q4_0.gguf": write_gguf(tmp_path / "w" / "m-Q4_0.gguf")})
    write_gguf(tmp_path / "models" / "x-Q8_0.gguf")
    places = LibraryPlaces(cache, (tmp_path / "models",))
    first = scan(LibraryService(lambda: places))
    again = scan(LibraryService(lambda: places))
    assert [m.id for m in first.models] == [m.id for m in again.models]
    assert len({m.id for m in first.models}) == 2
    service = LibraryService(lambda: places)
    model = asyncio.run(service.get(first.models[0].id))  # scans on first use
    assert (model.id, model.name) == (first.models[0].id, first.models[0].name)
    assert {m.revision for m in first.models} == {None, COMMIT}
    with pytest.raises(NotFoundError, match="No model with id"):
        asyncio.run(service.get("0000000000000000"))
