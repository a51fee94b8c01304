"""The N for llama.cpp's --n-cpu-moe that puts every block of a mixture of experts on the GPU.

Keeping the experts of the first N blocks in RAM frees the GPU for everything else
(attention, the shared weights, the cache), which runs far faster than leaving whole
blocks on the CPU: only the few experts each token picks are read from RAM.
"""

from __future__ import annotations

from roundhouse.api.fit import AdviceKind, FitAdvice, FitOptions
from roundhouse.core.knowledge.fit.devices import Budget
from roundhouse.core.knowledge.fit.llamacpp import evaluate
from roundhouse.core.knowledge.shape import ModelShape


def cpu_moe_to_fit(shape: ModelShape, budget: Budget, options: FitOptions, ctx: int) -> int | None:
    """The fewest blocks whose experts, kept in RAM, let every block sit on the GPU(s);
    None for a dense model, without a GPU, or when no N fits (RAM too small as well)."""
    if not shape.expert_bytes or not budget.gpus:
        return None
    every = options.model_copy(update={"gpu_layers": shape.n_layer + 1})

    def loads(n: int) -> tuple[bool, bool]:
        outcome = evaluate(shape, budget, every.model_copy(update={"n_cpu_moe": n}), ctx)
        gpus = all(load.fits for load in outcome.gpu_loads())
        return gpus, all(load.fits for load in outcome.loads)

    # The GPUs' share shrinks as N grows and RAM's grows: the smallest N the GPUs hold is
    # the one RAM holds best.
    low, high = 0, shape.n_layer
    if not loads(high)[0]:
        return None
    while low < high:
        mid = (low + high) // 2
        if loads(mid)[0]:
            high = mid
        else:
            low = mid + 1
    return low if loads(low)[1] else None


def moe_advice(shape: ModelShape, budget: Budget, options: FitOptions, ctx: int) -> list[FitAdvice]:
    """--n-cpu-moe N as advice, when it differs from the N asked for."""
    n = cpu_moe_to_fit(shape, budget, options, ctx)
    if n is None or n == min(options.n_cpu_moe, shape.n_layer):
        return []
    if n == 0:
        text = "Every expert fits on the GPU: no need to keep any in RAM (--n-cpu-moe 0)."
    else:
        text = (
            f"Keep the experts of the first {n} of {shape.n_layer} layers in RAM "
            f"(--n-cpu-moe {n}): everything else fits on the GPU, which is much faster than "
            "leaving whole layers on the CPU."
        )
    return [FitAdvice(kind=AdviceKind.CPU_MOE, text=text, value=n)]
