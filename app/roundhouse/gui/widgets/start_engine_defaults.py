"""What an engine does with a start option left empty, in words for the start dialog's fields.

For a GGUF file on llama.cpp the dialog fills in real numbers from the fit estimate
(start_defaults). The other engines decide some values only as they load a model, from the
model's config or the machine: those fields say how, with the number where the machine
settles it, rather than a bare "engine default".
"""

from __future__ import annotations

from collections.abc import Sequence

from roundhouse.api.engines import EngineId
from roundhouse.api.hardware import GpuInfo
from roundhouse.base.units import GIB

# Ollama (0.12 on) sets its default context by the machine's total VRAM, a tier each
# (server/routes.go, "vram-based default context"), and lowers it when memory is short.
OLLAMA_CONTEXT_TIERS = ((47 * GIB, 262_144), (23 * GIB, 32_768), (0, 4_096))
OLLAMA_PARALLEL = 1  # OLLAMA_NUM_PARALLEL's default


def ollama_default_context(gpus: Sequence[GpuInfo]) -> int:
    """The context Ollama gives a model it loads on this machine when nothing sets one."""
    vram = sum(gpu.memory_total_bytes or 0 for gpu in gpus)
    return next(context for floor, context in OLLAMA_CONTEXT_TIERS if vram >= floor)


def default_words(engine: EngineId | None, gpus: Sequence[GpuInfo]) -> dict[str, str]:
    """The words an empty field shows, by InstanceOptions field; "engine default" where
    there is nothing better to say."""
    if engine == EngineId.OLLAMA:
        context = ollama_default_context(gpus)
        return {
            "ctx_size": f"Ollama's: up to {context:,} here (less if memory is short)",
            "parallel": f"Ollama's: {OLLAMA_PARALLEL} at a time",
        }
    if engine in (EngineId.VLLM, EngineId.SGLANG):
        name = "vLLM" if engine == EngineId.VLLM else "SGLang"
        return {
            "ctx_size": "the model's own (its config's context length)",
            "parallel": f"{name}'s: as many as its KV cache holds",
        }
    return {"ctx_size": "engine default", "parallel": "engine default"}
