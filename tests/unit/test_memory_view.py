"""`roundhouse engines memory`: each device's estimate beside what the engine logged."""

from __future__ import annotations

from rich.console import Console

from roundhouse.api.fit import FitOptions
from roundhouse.api.instance_memory import InstanceMemory
from roundhouse.api.instances import InstanceInfo
from roundhouse.cli.memory_view import memory_view, pairs
from roundhouse.core.knowledge.fit import estimate_fit
from roundhouse.core.knowledge.fit.actual import parse_llama_server_load
from tests.unit.builders import ready_instance
from tests.unit.knowledge.test_fit_cases import llama_3_1_8b_q4_k_m, rtx_4090
from tests.unit.knowledge.test_memory_actual import CUDA_ISWA, METAL_2025


def _info(instance_id: str, memory: InstanceMemory | None = None) -> InstanceInfo:
    return ready_instance(instance_id, model="/models/m.gguf", memory=memory)


def _render(memory: InstanceMemory) -> str:
    console = Console(width=200, record=True)
    console.print(memory_view(_info("a", memory=memory)))
    return console.export_text()


def test_gpu_and_ram_pair_by_kind_and_number() -> None:
    estimate = estimate_fit(llama_3_1_8b_q4_k_m(), rtx_4090(), FitOptions(context_length=4096))
    actual = parse_llama_server_load(CUDA_ISWA.splitlines()).use
    found = pairs(estimate, actual)
    assert [label for label, _, _ in found] == [
        "GPU 0 (NVIDIA GeForce RTX 4090) [CUDA0]",
        "RAM",
    ]
    assert all(fit is not None and use is not None for _, fit, use in found)
    text = _render(InstanceMemory(actual=actual, estimate=estimate))
    assert "15.4 GiB" in text  # CUDA0's weights, as logged
    assert "Estimate: Fits on the GPU" in text


def test_a_device_on_one_side_only_shows_a_dash() -> None:
    actual = parse_llama_server_load(METAL_2025.splitlines()).use
    assert [(label, fit) for label, fit, _ in pairs(None, actual)] == [
        ("Metal", None),
        ("CPU", None),
    ]
    text = _render(InstanceMemory(actual=actual, notes=["No estimate: it is a test."]))
    assert "Layers on the GPU: 13 of 13." in text
    assert "No estimate: it is a test." in text
    assert "—" in text


def test_no_memory_says_why() -> None:
    text = _render(InstanceMemory())
    assert text.strip() == ""
    console = Console(width=200, record=True)
    console.print(memory_view(_info("a")))
    assert "reports no memory figures" in console.export_text()
