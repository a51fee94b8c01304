"""Scanning a library of 200 models: cold (the first scan ever: every GGUF listed from its
first metadata entries, then its whole header read in the background; beside it the same
with every whole header read before the list returns), warm (the facts cache in memory) and
after a restart (the cache file). Goal: under 1 s.

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

from roundhouse.api.library import LibraryList
from roundhouse.core.models.library.gguf_probe import probe_gguf
from roundhouse.core.models.library.places import LibraryPlaces
from roundhouse.core.models.library.service import LibraryService
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


def _check_listing(listing: LibraryList) -> None:
    assert [m.name for m in listing.models if m.error or not m.architecture] == []
    assert all(m.parameter_label or m.parameter_count for m in listing.models)


def timed_scan(service: LibraryService) -> tuple[float, int]:
    started = time.perf_counter()
    listing = asyncio.run(service.scan())
    elapsed = time.perf_counter() - started
    _check_listing(listing)
    return elapsed, len(listing.models)


def timed_first_scan(service: LibraryService) -> tuple[float, float, int]:
    """Seconds to the list, seconds until every whole header has been read, and models."""

    async def run() -> tuple[float, float, int]:
        started = time.perf_counter()
        listing = await service.scan()
        listed = time.perf_counter() - started
        _check_listing(listing)
        while listing.checking:
            await asyncio.sleep(0.25)  # as a page refreshing its list would
            listing = await service.scan()
        checked = time.perf_counter() - started
        _check_listing(listing)
        await service.close()
        return listed, checked, len(listing.models)

    return asyncio.run(run())


@pytest.mark.perf
def test_library_scan_of_200_models(tmp_path: Path, report: Any) -> None:
    places, expected = build_library(tmp_path)
    assert expected == 200
    cache_file = tmp_path / "data" / "library-facts.json"

    # The first scan the way it was before the quick probe: every whole header read first.
    whole_first, _ = timed_scan(
        LibraryService(lambda: places, gguf_probe=probe_gguf, cache_file=tmp_path / "whole.json")
    )
    service = LibraryService(lambda: places, cache_file=cache_file)
    cold, checked, count = timed_first_scan(service)
    assert count == expected
    warm = [timed_scan(service)[0] for _ in range(ROUNDS)]
    restarted = [
        timed_scan(LibraryService(lambda: places, cache_file=cache_file))[0] for _ in range(ROUNDS)
    ]

    report.add("models", count)
    report.add("cold_s (the first scan: listed from the first metadata entries)", round(cold, 3))
    report.add("cold_checked_s (until every whole header was read after it)", round(checked, 3))
    report.add(
        "cold_whole_headers_first_s (every whole header read before listing)", round(whole_first, 3)
    )
    report.add("warm_median_s (facts cached in memory)", round(statistics.median(warm), 3))
    report.add(
        "restart_median_s (facts from the cache file)", round(statistics.median(restarted), 3)
    )
    report.add("cache_file_bytes", cache_file.stat().st_size)
    report.add("goal_s", GOAL_S)
    assert cold < GOAL_S
    assert statistics.median(warm) < GOAL_S
    assert statistics.median(restarted) < GOAL_S
