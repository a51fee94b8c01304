"""The first-run guide's picking: the catalog, the largest starter that fits comfortably on
synthetic machines, downloaded starters preferred, offline with only the library, the engine
step, and the words both front ends show."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from roundhouse.api.engines import (
    DetectedEngine,
    EngineDetection,
    EngineId,
    EnginesOverview,
    FoundBy,
    ModelFormat,
)
from roundhouse.api.fit import FitQuery, FitVerdict, ModelFit
from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.library import LibraryModel, LibrarySource
from roundhouse.api.starters import (
    EngineSetupState,
    OptionKind,
    SetupCost,
    SizedFrom,
    StarterList,
    about,
)
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.errors import NotFoundError
from roundhouse.core.guide.catalog import (
    MB,
    StarterCatalogError,
    catalog_shape,
    load_starters,
    source_for,
)
from roundhouse.core.guide.choice import comfort
from roundhouse.core.guide.starter_list import Fit, starter_list
from roundhouse.core.guide.steps import setup_guide
from roundhouse.core.hardware.recommend import recommend
from roundhouse.core.knowledge.fit import estimate_fit
from roundhouse.core.models.hub.errors import HubUnavailableError
from roundhouse.gui.first_run.words import download_words, fit_text, shown_options, state_text
from tests.unit.knowledge.test_fit_cases import (
    GIB,
    cpu_only,
    mac_16gb,
    machine,
    nvidia,
    rtx_3070,
    rtx_4090,
)

CATALOG = load_starters()
SMALLEST_FIRST = ["qwen2.5-0.5b", "llama-3.2-1b", "qwen2.5-3b", "llama-3.1-8b"]


def hub_like(inventory: HardwareInventory, missing: str | None = None) -> Fit:
    """A fit as the Hub would answer: the catalog's numbers, sized on `inventory`; `missing`
    is a repo the Hub does not have."""

    async def fit(query: FitQuery) -> ModelFit:
        if query.repo == missing:
            raise NotFoundError(f"No model named {missing} on Hugging Face.")
        for spec in CATALOG.starter:
            for engine in EngineId:
                src = source_for(spec, engine)
                if src is not None and src.repo == query.repo:
                    report = estimate_fit(catalog_shape(spec, src), inventory, query.options)
                    return ModelFit(target=spec.title, size_bytes=src.size_bytes, report=report)
        raise NotFoundError(f"not a starter: {query}")

    return fit


async def _hub_down(query: FitQuery) -> ModelFit:
    raise HubUnavailableError("Cannot reach Hugging Face: connection refused.")


def listing(
    inventory: HardwareInventory,
    engine: EngineId = EngineId.LLAMA_CPP,
    library: list[LibraryModel] | None = None,
    fit: Fit | None = None,
) -> StarterList:
    return asyncio.run(
        starter_list(CATALOG, engine, inventory, library or [], fit or hub_like(inventory))
    )


def gguf_model(path: str, repo: str | None, size: int = 800 * MB) -> LibraryModel:
    return LibraryModel(
        id=f"id-{Path(path).name}",
        name=Path(path).name,
        source=LibrarySource.HF_CACHE if repo else LibrarySource.FOLDER,
        format=ModelFormat.GGUF,
        path=path,
        paths=[path],
        repo=repo,
        size_bytes=size,
        engines=[EngineId.LLAMA_CPP, EngineId.OLLAMA],
    )


def test_the_catalog_lists_every_starter_smallest_first_in_each_form() -> None:
    assert [s.id for s in CATALOG.starter] == SMALLEST_FIRST
    for engine in (EngineId.LLAMA_CPP, EngineId.MLX, EngineId.OLLAMA):
        sources = [source_for(s, engine) for s in CATALOG.starter]
        assert all(sources), engine
        sizes = [s.size_bytes for s in sources if s is not None]
        assert sizes == sorted(sizes), engine
    gguf = source_for(CATALOG.starter[0], EngineId.LLAMA_CPP)
    assert gguf is not None and gguf.files == ("Qwen2.5-0.5B-Instruct-Q4_K_M.gguf",)
    assert gguf.group == "Q4_K_M" and gguf.repo == "bartowski/Qwen2.5-0.5B-Instruct-GGUF"
    assert source_for(CATALOG.starter[0], EngineId.VLLM) is None
    # The shapes are the models': an 8B with 8 KV heads, a 0.5B with 2.
    big = catalog_shape(CATALOG.starter[-1], source_for(CATALOG.starter[-1], EngineId.LLAMA_CPP))  # type: ignore[arg-type]
    assert big.n_layer == 32 and big.n_head_kv == 8 and 7.5e9 < big.parameter_count < 8.5e9
    assert abs(big.weight_bytes - 4920 * MB) < MB


def test_a_broken_catalog_names_its_file(tmp_path: Path) -> None:
    bad = tmp_path / "starters.toml"
    bad.write_text('schema = 1\n[[starter]]\nid = "Not An Id"\n', encoding="utf-8")
    with pytest.raises(StarterCatalogError, match=str(bad)):
        load_starters(bad)


@pytest.mark.parametrize(
    ("inventory", "expected"),
    [
        (rtx_4090(), "llama-3.1-8b"),  # 24 GB of VRAM: the largest, on the GPU
        (rtx_3070(), "llama-3.1-8b"),  # 8 GB: the 8B at 4 bits fits with a 4k context
        (machine([nvidia(0, 4 * GIB, int(3.6 * GIB))]), "qwen2.5-3b"),  # a 4 GB card
        (cpu_only(), "qwen2.5-3b"),  # no GPU: an 8B would answer slowly on the CPU
        (machine([], ram_total=4 * GIB, ram_free=3 * GIB), "llama-3.2-1b"),  # a small board
    ],
)
def test_the_largest_starter_that_fits_comfortably_is_recommended(
    inventory: HardwareInventory, expected: str
) -> None:
    starters = listing(inventory)
    assert starters.online and starters.recommended == expected, starters.reason
    chosen = next(o for o in starters.options if o.id == expected)
    assert chosen.comfortable and chosen.title in starters.reason
    assert chosen.download is not None and chosen.download.download_bytes == chosen.size_bytes
    assert all(o.sized_from == SizedFrom.HUB and not o.downloaded for o in starters.options)
    assert [o.id for o in starters.options] == SMALLEST_FIRST


def test_on_a_mac_the_mlx_starters_are_sized_for_the_gpu_share() -> None:
    starters = listing(mac_16gb(), EngineId.MLX)
    assert starters.recommended == "llama-3.1-8b"
    eight = starters.options[-1]
    assert eight.repo == "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit" and eight.files == []
    assert eight.verdict == FitVerdict.FULL_GPU


def test_nothing_comfortable_takes_the_smallest_that_runs() -> None:
    tiny = machine([], ram_total=GIB, ram_free=int(0.95 * GIB))
    starters = listing(tiny)
    assert starters.recommended == "qwen2.5-0.5b"
    assert "smallest" in starters.reason


def test_a_downloaded_starter_needs_no_download_and_is_preferred() -> None:
    path = "/hf/snapshots/abc/Llama-3.2-1B-Instruct-Q4_K_M.gguf"
    library = [gguf_model(path, "bartowski/Llama-3.2-1B-Instruct-GGUF", 808 * MB)]
    inventory = rtx_4090()
    starters = listing(inventory, library=library, fit=_local_or_hub(inventory, library))
    one = next(o for o in starters.options if o.id == "llama-3.2-1b")
    assert one.downloaded and one.model == path and one.download is None
    assert one.sized_from == SizedFrom.DISK and one.library_id == library[0].id
    assert starters.recommended == "llama-3.2-1b"
    assert "already downloaded" in starters.reason
    # The library's copy is that starter: not listed a second time.
    assert all(o.kind == OptionKind.STARTER for o in starters.options)


def _local_or_hub(inventory: HardwareInventory, library: list[LibraryModel]) -> Fit:
    hub = hub_like(inventory)

    async def fit(query: FitQuery) -> ModelFit:
        if query.library_id is not None:
            spec = CATALOG.starter[1]
            src = source_for(spec, EngineId.LLAMA_CPP)
            assert src is not None
            report = estimate_fit(catalog_shape(spec, src), inventory, query.options)
            return ModelFit(target="local", size_bytes=src.size_bytes, report=report)
        return await hub(query)

    return fit


def test_offline_only_models_on_this_machine_are_offered() -> None:
    other = gguf_model("/models/my-own-model.Q4_K_M.gguf", None, 300 * MB)
    starters = listing(cpu_only(), library=[other], fit=_hub_down_but_local(cpu_only()))
    assert not starters.online
    assert starters.offline_reason == "Cannot reach Hugging Face: connection refused."
    assert all(o.sized_from == SizedFrom.CATALOG for o in starters.options[:4])
    local = starters.options[-1]
    assert local.kind == OptionKind.LIBRARY and local.model == other.path and local.downloaded
    assert starters.recommended == local.id
    assert starters.reason.startswith("Hugging Face cannot be reached")
    # The starters are still shown, after the model on this machine, each needing a download.
    shown = shown_options(starters)
    assert [o.id for o in shown] == [local.id] + [o.id for o in starters.options[:-1]]
    assert state_text(starters.options[0], starters.online) == "needs a download (offline now)"
    assert state_text(local, starters.online) == "in your library"
    words = download_words(starters.options[0], online=False)
    assert "needs a download" in words and "import a model file" in words


def _hub_down_but_local(inventory: HardwareInventory) -> Fit:
    async def fit(query: FitQuery) -> ModelFit:
        if query.library_id is None:
            return await _hub_down(query)
        spec = CATALOG.starter[0]
        src = source_for(spec, EngineId.LLAMA_CPP)
        assert src is not None
        report = estimate_fit(catalog_shape(spec, src), inventory, query.options)
        return ModelFit(target="local", size_bytes=300 * MB, report=report)

    return fit


def test_offline_with_nothing_local_says_what_to_do() -> None:
    starters = listing(cpu_only(), fit=_hub_down)
    assert not starters.online and starters.recommended is None
    assert "Import a model file" in starters.reason and "connect to the internet" in starters.reason
    assert "Settings" not in starters.reason
    # Sized from the catalog all the same, so the list still says what each would take.
    assert starters.options[0].size_bytes == 398 * MB
    assert starters.options[0].verdict == FitVerdict.CPU_ONLY


def test_a_starter_the_hub_lacks_is_marked_and_passed_over() -> None:
    inventory = rtx_4090()
    starters = listing(
        inventory, fit=hub_like(inventory, "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF")
    )
    eight = starters.options[-1]
    assert eight.problem is not None and "No model named" in eight.problem
    assert starters.recommended == "qwen2.5-3b"


def test_ollama_starters_are_tags_matched_in_ollamas_library() -> None:
    pulled = LibraryModel(
        id="ollama:qwen2.5:0.5b",
        name="qwen2.5:0.5b",
        source=LibrarySource.OLLAMA,
        format=ModelFormat.OLLAMA,
        size_bytes=398 * MB,
        engines=[EngineId.OLLAMA],
    )
    loose_gguf = gguf_model("/models/x.gguf", None)
    starters = listing(cpu_only(), EngineId.OLLAMA, library=[pulled, loose_gguf], fit=_hub_down)
    first = starters.options[0]
    assert first.ollama_tag == "qwen2.5:0.5b" and first.downloaded
    assert first.model == "qwen2.5:0.5b" and first.repo is None
    # Without a Hub to ask, Ollama's starters still count as online (Ollama pulls them).
    assert starters.online
    # A loose GGUF file is not offered for Ollama: it would need importing first.
    assert len(starters.options) == 4


def test_comfort_on_the_cpu_needs_small_weights_and_half_the_ram() -> None:
    eight = CATALOG.starter[-1]
    src = source_for(eight, EngineId.LLAMA_CPP)
    assert src is not None
    report = estimate_fit(catalog_shape(eight, src), cpu_only())
    assert report.verdict == FitVerdict.CPU_ONLY
    fits, words = comfort(report, 32 * GIB)
    assert not fits and words.endswith("On the CPU alone it would answer slowly.")


def _overview(found: list[EngineId]) -> EnginesOverview:
    detected = [
        DetectedEngine(
            id=e, found_by=FoundBy.PATH, path=f"/bin/{e}", version="1.0", where="on PATH"
        )
        for e in found
    ]
    return EnginesOverview(
        catalog=load_catalog(),
        detection=EngineDetection(found=detected, missing=[]),
        detected_at=datetime.now(UTC).timestamp(),
    )


def _with_recommendations(inventory: HardwareInventory) -> HardwareInventory:
    recs = recommend(
        os_name=inventory.os, cpu=inventory.cpu, memory=inventory.memory, gpus=inventory.gpus
    )
    return inventory.model_copy(update={"recommendations": recs})


def test_the_engine_step_offers_installed_installable_and_external_engines() -> None:
    inventory = _with_recommendations(rtx_4090())  # Linux + NVIDIA: vLLM ranks first
    guide = setup_guide(inventory, _overview([]), CATALOG, first_run_done=False)
    assert [c.engine for c in guide.engines] == [EngineId.LLAMA_CPP, EngineId.OLLAMA]
    assert guide.recommended == EngineId.LLAMA_CPP and not guide.first_run_done
    llama, ollama = guide.engines
    assert llama.state == EngineSetupState.INSTALL and llama.cost is not None
    assert llama.cost.download_bytes == 40 * MB and "official build" in llama.detail
    assert ollama.state == EngineSetupState.EXTERNAL
    assert ollama.install_url == "https://ollama.com/download/linux"
    assert "NVIDIA GeForce RTX 4090 with 24 GiB VRAM" in guide.hardware

    ready = setup_guide(inventory, _overview([EngineId.LLAMA_CPP]), CATALOG, first_run_done=True)
    assert ready.engines[0].state == EngineSetupState.READY
    assert ready.engines[0].cost is None and ready.engines[0].detail == "Installed 1.0, on PATH."


def test_on_a_mac_mlx_comes_first() -> None:
    inventory = _with_recommendations(mac_16gb().model_copy(update={
        "cpu": mac_16gb().cpu.model_copy(update={"arch": "arm64"})
    }))  # fmt: skip
    guide = setup_guide(inventory, _overview([EngineId.OLLAMA]), CATALOG, first_run_done=False)
    assert [c.engine for c in guide.engines] == [EngineId.MLX, EngineId.LLAMA_CPP, EngineId.OLLAMA]
    assert guide.engines[0].state == EngineSetupState.INSTALL
    assert guide.engines[2].state == EngineSetupState.READY


def test_costs_and_durations_in_words() -> None:
    cost = SetupCost(download_bytes=398 * MB, disk_bytes=398 * MB, seconds=64, note="at 50 Mbit/s")
    assert cost.in_words() == "379.6 MiB to download, 379.6 MiB on disk, about 1 min at 50 Mbit/s"
    assert about(20) == "under a minute"
    assert about(3 * 3600 + 600) == "about 3 h 10 min"
    assert about(7200) == "about 2 h"


def test_fit_words_say_when_a_model_is_tight() -> None:
    starters = listing(cpu_only())
    three, eight = starters.options[2], starters.options[3]
    assert fit_text(three) == "runs on the CPU"
    assert fit_text(eight) == "runs on the CPU (slow or tight)"
    assert state_text(three, True).startswith("download ")
