"""Scanning a library of 200 models: cold (every header read), warm (the facts cache in
memory) and after a restart (the cache file). Goal: under 1 s.

The GGUFs carry real headers of well-known models (full vocabularies, every tensor info)
cloned into sparse files of their published size; half sit in a Hugging Face cache (GGUF
repos with two quantizations, safetensors repos), half in user and LM Studio folders,
some split in parts."""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from roundhouse.core.models.library import LibraryPlaces, LibraryService
from tests.fixtures.models.gguf_headers import KNOWN_MODELS, write_known_gguf
from tests.unit.models.library_layouts import hf_cache_repo, write_safetensors_model

GOAL_S = 1.0
ROUNDS = 5


def clone_sparse(template: Path, target: Path) -> Path:
    """The template's header bytes, then a hole up to its size: a copy that takes no space."""
    with template.open("rb") as f:
        end = os.lseek(f.fileno(), 0, os.SEEK_HOLE)
        os.lseek(f.fileno(), 0, os.SEEK_SET)
        head = f.read(end)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as f:
        f.write(head)
        f.truncate(template.stat().st_size)
    return target


def build_library(root: Path) -> tuple[LibraryPlaces, int]:
    (root / "templates").mkdir(parents=True)
    templates = [write_known_gguf(m, root / "templates") for m in KNOWN_MODELS.values()][:5]
    cache, folder, lmstudio = root / "hub", root / "Модели 模型", root / "lmstudio"
    count = 0
    for i in range(40):  # 80 entries: GGUF repos with two quantizations
        files = {
            f"m{i}-Q4_K_M.gguf": clone_sparse(templates[i % 5], root / "tmp" / f"{i}a"),
            f"m{i}-Q8_0.gguf": clone_sparse(templates[(i + 1) % 5], root / "tmp" / f"{i}b"),
        }
        hf_cache_repo(cache, f"org{i % 7}/model-{i}-GGUF", files)
        count += 2
    for i in range(20):  # 20 entries: safetensors repos
        model = write_safetensors_model(root / "tmp" / f"st{i}")
        hf_cache_repo(cache, f"org/st-{i}", {p.name: p.read_bytes() for p in model.iterdir()})
        count += 1
    for i in range(70):  # 70 entries in user folders, every tenth split in two parts
        where = folder / f"family {i % 9}"
        if i % 10 == 0:
            for part in (1, 2):
                name = f"split-{i}-Q4_K_M-{part:05d}-of-00002.gguf"
                clone_sparse(templates[i % 5], where / name)
        else:
            clone_sparse(templates[i % 5], where / f"model-{i}-Q5_K_M.gguf")
        count += 1
    for i in range(30):  # 30 entries in LM Studio's publisher/repo tree
        clone_sparse(templates[i % 5], lmstudio / f"pub{i % 4}" / f"repo-{i}" / f"r{i}-Q6_K.gguf")
        count += 1
    shutil.rmtree(root / "tmp")
    places = LibraryPlaces(cache, (folder,), imported=root / "imported", lmstudio=(lmstudio,))
    return places, count


def timed_scan(service: LibraryService) -> tuple[float, int]:
    started = time.perf_counter()
    listing = asyncio.run(service.scan())
    elapsed = time.perf_counter() - started
    assert [m.name for m in listing.models if m.error or not m.architecture] == []
    return elapsed, len(listing.models)


@pytest.mark.perf
def test_library_scan_of_200_models(tmp_path: Path, report: Any) -> None:
    places, expected = build_library(tmp_path)
    assert expected == 200
    cache_file = tmp_path / "data" / "library-facts.json"

    service = LibraryService(lambda: places, cache_file=cache_file)
    cold, count = timed_scan(service)
    assert count == expected
    warm = [timed_scan(service)[0] for _ in range(ROUNDS)]
    restarted = [
        timed_scan(LibraryService(lambda: places, cache_file=cache_file))[0] for _ in range(ROUNDS)
    ]

    report.add("models", count)
    report.add("cold_s (every GGUF header read)", round(cold, 3))
    report.add("warm_median_s (facts cached in memory)", round(statistics.median(warm), 3))
    report.add(
        "restart_median_s (facts from the cache file)", round(statistics.median(restarted), 3)
    )
    report.add("cache_file_bytes", cache_file.stat().st_size)
    report.add("goal_s", GOAL_S)
    assert statistics.median(warm) < GOAL_S
    assert statistics.median(restarted) < GOAL_S
