"""Ollama's /api/ps as the instance's VRAM: summed over its models, NVML first where it tells."""

from __future__ import annotations

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceOrigin
from roundhouse.api.ollama import OllamaLoadedModel
from roundhouse.core.metrics.ollama_figures import figures_of
from roundhouse.core.metrics.point import build_point
from tests.unit.builders import idle_inputs, ready_instance

GIB = 1024**3


def _vram(nvml: int | None, figures: dict[str, float]) -> int | None:
    ollama = ready_instance(
        "o", engine=EngineId.OLLAMA, model=None, origin=InstanceOrigin.EXTERNAL, port=11434
    )
    inputs = idle_inputs(ollama, vram_bytes=nvml, figures=figures)
    return build_point(inputs).vram_bytes


def test_the_figures_sum_every_loaded_model() -> None:
    loaded = [
        OllamaLoadedModel(name="a:latest", size=4 * GIB, size_vram=3 * GIB),
        OllamaLoadedModel(name="b:latest", size=2 * GIB, size_vram=0),
    ]
    figures = figures_of(loaded)
    assert figures["ollama:size_vram_bytes"] == 3 * GIB
    assert figures["ollama:size_bytes"] == 6 * GIB
    assert figures["ollama:models_loaded"] == 2
    assert figures_of([])["ollama:size_vram_bytes"] == 0


def test_size_vram_stands_in_where_nvml_attributes_nothing() -> None:
    told = figures_of([OllamaLoadedModel(name="a", size=4 * GIB, size_vram=3 * GIB)])
    assert _vram(None, told) == 3 * GIB
    assert _vram(0, told) == 3 * GIB
    assert _vram(5 * GIB, told) == 5 * GIB  # NVML saw the runner: its figure wins
    assert _vram(None, {}) is None
