"""An instance's memory after its load: the options of the estimate, and both sides joined.

The model is the tiny generated GGUF; the lines are llama-server's, recorded from its load
of that model (tests/unit/knowledge/test_memory_actual.py); the machines are made up.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from roundhouse.api.engines import EngineId, FlashAttention, InstanceOptions
from roundhouse.api.fit import CacheType, DeviceKind, FitVerdict
from roundhouse.api.hardware import HardwareInventory
from roundhouse.core.instances.memory import MemoryReader
from roundhouse.core.knowledge.fit.actual import LoadFacts
from roundhouse.core.knowledge.gguf import read_gguf_header, shape_from_gguf
from roundhouse.core.knowledge.run_options import ALL_LAYERS, fit_options, requested_layers
from roundhouse.core.knowledge.shape import ModelShape
from roundhouse.core.supervise.logcapture import LogCapture
from tests.fixtures.models.tiny_llama import write_tiny_llama_gguf
from tests.unit.knowledge.test_fit_cases import cpu_only, rtx_4090
from tests.unit.knowledge.test_memory_actual import CPU_TINY, CPU_TINY_DEFAULT, CPU_TINY_NGL


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_llama_gguf(tmp_path_factory.mktemp("m") / "tiny.gguf", seed=0)


@pytest.fixture(scope="module")
def shape(tiny: Path) -> ModelShape:
    return shape_from_gguf(read_gguf_header(tiny))


def test_requested_layers(shape: ModelShape) -> None:
    def asked(value: int | str | None) -> int | None:
        return requested_layers(InstanceOptions(n_gpu_layers=value), shape)  # type: ignore[arg-type]

    assert asked(None) is None
    assert asked("auto") is None
    assert asked(-1) is None  # llama.cpp's "auto" in older builds
    assert asked(0) == 0
    assert asked(12) == 12
    assert asked("all") == shape.n_layer + 1
    assert requested_layers(InstanceOptions(n_gpu_layers="all"), None) == ALL_LAYERS


def test_fit_options_take_the_instances_choices(shape: ModelShape) -> None:
    options = InstanceOptions(
        ctx_size=4096,
        parallel=4,
        cache_type_k="q8_0",
        cache_type_v="q8_0",
        flash_attn=FlashAttention.ON,
        n_gpu_layers=2,
    )
    # What the engine said loses to what the user chose.
    facts = LoadFacts(n_ctx=8192, n_seq=1, flash_attention=False, n_ubatch=256)
    fit = fit_options(options, facts, shape)
    assert (fit.context_length, fit.n_parallel) == (1024, 4)  # per request
    assert (fit.cache_type_k, fit.cache_type_v) == (CacheType.Q8_0, CacheType.Q8_0)
    assert fit.flash_attention is True
    assert fit.gpu_layers == 2
    assert fit.ubatch_size == 256  # no option for it: the engine's


def test_fit_options_fill_what_was_left_to_the_engine(shape: ModelShape) -> None:
    facts = LoadFacts(n_ctx=2048, n_seq=2, flash_attention=False, kv_unified=True)
    fit = fit_options(InstanceOptions(flash_attn=FlashAttention.AUTO), facts, shape)
    assert (fit.context_length, fit.n_parallel, fit.kv_unified) == (1024, 2, True)
    assert fit.flash_attention is False
    assert fit.gpu_layers is None
    assert fit.ubatch_size == 512
    # Nothing known at all: the estimator's own defaults.
    bare = fit_options(InstanceOptions(cache_type_k="nonsense"), LoadFacts(), shape)
    assert (bare.context_length, bare.n_parallel, bare.cache_type_k) == (None, 1, CacheType.F16)
    assert bare.flash_attention is True


async def _after_load(
    model: Path | str,
    lines: str,
    inventory: HardwareInventory | None,
    *,
    complete: bool = True,
    **options: object,
):  # type: ignore[no-untyped-def]
    async def get() -> HardwareInventory:
        assert inventory is not None
        return inventory

    reader = MemoryReader(get if inventory is not None else None)
    task = reader.snapshot(EngineId.LLAMA_CPP)
    return await reader.after_load(
        EngineId.LLAMA_CPP,
        InstanceOptions(model=str(model), ctx_size=512, parallel=1, **options),  # type: ignore[arg-type]
        lines.splitlines(),
        complete=complete,
        hardware=task,
    )


def test_actual_beside_the_estimate_for_the_tiny_model(tiny: Path) -> None:
    memory = asyncio.run(_after_load(tiny, CPU_TINY, cpu_only()))
    assert memory is not None and memory.notes == []
    assert memory.actual is not None and memory.estimate is not None
    [actual] = memory.actual.devices
    [estimate] = memory.estimate.devices
    assert actual.kind == estimate.kind == DeviceKind.CPU
    assert memory.estimate.verdict == FitVerdict.CPU_ONLY
    assert memory.estimate.context_length == 512
    # The log prints MiB with two decimals (0.125 MiB of KV shows as 0.12).
    assert abs(estimate.weights_bytes - actual.weights_bytes) <= 0.01 * 1024**2
    assert abs(estimate.kv_bytes - actual.kv_bytes) <= 0.01 * 1024**2


def test_default_verbosity_says_how_to_get_the_figures(tiny: Path) -> None:
    memory = asyncio.run(_after_load(tiny, CPU_TINY_DEFAULT, cpu_only()))
    assert memory is not None
    assert memory.actual is None
    assert memory.estimate is not None
    assert any("--memory-report" in note for note in memory.notes)


def test_lost_lines_are_said(tiny: Path) -> None:
    memory = asyncio.run(_after_load(tiny, "", cpu_only(), complete=False))
    assert memory is not None and memory.actual is None
    assert "log buffer" in memory.notes[0]
    # Lines lost before the weights' line: the report is whole all the same.
    kept = asyncio.run(_after_load(tiny, CPU_TINY, cpu_only(), complete=False))
    assert kept is not None and kept.actual is not None and kept.notes == []


def test_an_unused_gpu_is_worth_a_word(tiny: Path) -> None:
    memory = asyncio.run(_after_load(tiny, CPU_TINY, rtx_4090()))
    assert memory is not None and memory.actual is not None
    assert not memory.actual.cpu_fallback
    assert "No layers went to GPU 0" in memory.actual.notes[0]
    # The estimate puts the model on that GPU: the two sides disagree, as they should.
    assert memory.estimate is not None
    assert memory.estimate.verdict == FitVerdict.FULL_GPU


def test_asked_gpu_layers_that_fell_back(tiny: Path) -> None:
    memory = asyncio.run(_after_load(tiny, CPU_TINY_NGL, rtx_4090(), n_gpu_layers=99))
    assert memory is not None and memory.actual is not None
    assert memory.actual.cpu_fallback
    assert memory.actual.requested_layers == 99
    assert len(memory.actual.notes) == 1  # the fallback, not also the unused GPU


def test_no_estimate_without_a_local_gguf_or_inventory(tiny: Path, tmp_path: Path) -> None:
    repo = asyncio.run(_after_load("org/model", CPU_TINY, cpu_only()))
    assert repo is not None and repo.estimate is None and repo.actual is not None
    assert "not a local GGUF" in repo.notes[0]
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\xff" * 12)
    bad = asyncio.run(_after_load(broken, CPU_TINY, cpu_only()))
    assert bad is not None and bad.estimate is None
    assert "could not be read" in bad.notes[0]
    blind = asyncio.run(_after_load(tiny, CPU_TINY, None))
    assert blind is not None and blind.estimate is None
    assert "no hardware inventory" in blind.notes[0]


def test_other_engines_have_none(tmp_path: Path) -> None:
    capture = LogCapture(tmp_path / "x.log")
    capture.add_lines(CPU_TINY.splitlines())

    async def main() -> object:
        reader = MemoryReader()
        return await reader.read(EngineId.OLLAMA, InstanceOptions(), capture, None)

    assert asyncio.run(main()) is None
    capture.close()


def test_read_takes_the_capture_and_never_raises(tiny: Path, tmp_path: Path) -> None:
    capture = LogCapture(tmp_path / "x.log", ring_lines=5)
    capture.add_lines(CPU_TINY.splitlines())

    async def failing() -> HardwareInventory:
        raise OSError("probe broke")

    async def main() -> object:
        reader = MemoryReader(failing)
        options = InstanceOptions(model=str(tiny), ctx_size=512)
        return await reader.read(
            EngineId.LLAMA_CPP, options, capture, reader.snapshot(EngineId.LLAMA_CPP)
        )

    memory = asyncio.run(main())
    capture.close()
    # The ring kept 5 lines: the weights' line left it (a compute buffer alone is not the
    # load's figures); the failed probe means no estimate.
    assert memory is not None
    assert memory.actual is None and memory.estimate is None
    assert any("log buffer" in n for n in memory.notes)
    assert any("no hardware inventory" in n for n in memory.notes)
