"""Advice when a model does not fit at all: memory to free, engine settings, other engines."""

from __future__ import annotations

from roundhouse.api.fit import AdviceKind, FitAdvice
from roundhouse.api.hardware import GpuVendor
from roundhouse.base.units import format_bytes
from roundhouse.core.knowledge.fit.devices import Budget
from roundhouse.core.knowledge.fit.outcome import Outcome

MIB = 1024**2
GIB = 1024**3
# What macOS should keep for itself when the GPU's limit is raised (a common guide).
MACOS_RESERVE = 4 * GIB


def memory_advice(now: Outcome, budget: Budget) -> list[FitAdvice]:
    if not now.loads:  # the engine has no device here at all (vLLM without a GPU)
        text = "Run a GGUF version of this model with llama.cpp, or MLX on a Mac."
        return [FitAdvice(kind=AdviceKind.OTHER_ENGINE, text=text, value="llama.cpp")]
    advice = _utilization_advice(now)
    advice.extend(_gpu_limit_advice(now, budget))
    if now.missing:
        text = (
            f"Free about {format_bytes(now.missing)} more memory (close programs, stop other "
            "models), or choose a smaller model."
        )
        advice.append(FitAdvice(kind=AdviceKind.FREE_MEMORY, text=text, value=now.missing))
    return advice


def _utilization_advice(now: Outcome) -> list[FitAdvice]:
    """vLLM/SGLang: the model fits in its share, but other programs hold part of it."""
    loads = now.gpu_loads()
    if not loads or any(x.claim is None or not x.capacity or x.total > x.claim for x in loads):
        return []
    can = min((x.free - 256 * MIB) / (x.capacity or 1) for x in loads)
    needs = max(x.total / (x.capacity or 1) for x in loads)
    share = int(can * 100) / 100
    if share < needs:
        return []
    text = (
        f"Start it with --gpu-memory-utilization {share:.2f}: other programs hold part of "
        "the GPU, and the model needs no more than that."
    )
    return [FitAdvice(kind=AdviceKind.GPU_MEMORY_UTILIZATION, text=text, value=f"{share:.2f}")]


def _gpu_limit_advice(now: Outcome, budget: Budget) -> list[FitAdvice]:
    """Apple: the GPU's cap is what is short while the RAM would hold it."""
    apple = [g for g in budget.gpus if g.vendor == GpuVendor.APPLE and g.total]
    short = sum(x.short for x in now.gpu_loads())
    if not apple or not short or not now.loads[-1].fits:
        return []
    cap = apple[0].total or 0
    limit_mib = -(-(cap + short) // GIB) * 1024
    if limit_mib * MIB > budget.ram_total - MACOS_RESERVE:
        return []
    text = (
        "Let the GPU use more of the unified memory: sudo sysctl "
        f"iogpu.wired_limit_mb={limit_mib} (it lasts until a restart)."
    )
    return [FitAdvice(kind=AdviceKind.RAISE_GPU_LIMIT, text=text, value=limit_mib)]
