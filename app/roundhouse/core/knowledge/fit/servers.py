"""The fit of a safetensors model in vLLM or SGLang: GPUStack's rule, per GPU.

Each GPU of the tensor-parallel group holds 1/tp of the weights, GPUStack's 20% more for
activations and CUDA graphs, 2 GiB of framework overhead and 1/tp of the KV cache for
n_parallel requests of the full context. At start the engine claims
`gpu_memory_utilization` (0.9) of each GPU's total memory, so that much must be free,
and everything above must fit inside it. The smallest group that fits is chosen: 1 GPU,
else 2, 4 or 8 (tp must divide the attention heads), the GPUs with most free memory
first. Neither engine runs on Apple GPUs nor, here, on the CPU.
"""

from __future__ import annotations

from roundhouse.api.fit import DeviceKind, FitEngine, FitOptions, FitVerdict
from roundhouse.api.hardware import GpuVendor
from roundhouse.base.units import format_bytes
from roundhouse.core.knowledge.fit.cache import kv_layer_bytes
from roundhouse.core.knowledge.fit.compute import SERVER_FRAMEWORK_BYTES, server_activation
from roundhouse.core.knowledge.fit.devices import Budget, Gpu
from roundhouse.core.knowledge.fit.outcome import Load, Outcome
from roundhouse.core.knowledge.shape import ModelShape

SERVER_VENDORS = (GpuVendor.NVIDIA, GpuVendor.AMD)
TP_SIZES = (1, 2, 4, 8)


def engine_gpus(budget: Budget) -> list[Gpu]:
    usable = [g for g in budget.gpus if g.vendor in SERVER_VENDORS and g.total]
    return sorted(usable, key=lambda g: g.free, reverse=True)


def _loads(
    shape: ModelShape, gpus: list[Gpu], options: FitOptions, kv_total: int
) -> tuple[Load, ...]:
    tp = len(gpus)
    weights = shape.weight_bytes // tp
    loads = []
    for gpu in gpus:
        claim = int((gpu.total or 0) * options.gpu_memory_utilization)
        note = f"claims {format_bytes(claim)} ({options.gpu_memory_utilization:.0%} of it)"
        loads.append(
            Load(
                label=gpu.label,
                kind=DeviceKind.GPU,
                index=gpu.index,
                free=gpu.free,
                weights=weights,
                kv=kv_total // tp,
                compute=server_activation(weights),
                footprint=SERVER_FRAMEWORK_BYTES,
                layers=shape.n_layer,
                capacity=gpu.total,
                note=note,
                claim=claim,  # the unclaimed 10% is the margin
            )
        )
    return tuple(loads)


def evaluate(
    shape: ModelShape, budget: Budget, options: FitOptions, ctx: int, engine: FitEngine
) -> Outcome:
    kv_total = sum(
        kv_layer_bytes(
            shape, ctx, options.n_parallel, options.cache_type_k, options.cache_type_v, engine
        )
    )
    gpus = engine_gpus(budget)
    top = shape.n_layer + 1
    if not gpus:
        note = "vLLM and SGLang need an NVIDIA or AMD GPU here"
        return Outcome(
            FitVerdict.DOES_NOT_FIT, 0, top, (), shape.weight_bytes, kv_total, 0,
            shape.weight_bytes + kv_total, missing=0, notes=(note,),
        )  # fmt: skip
    best: tuple[Load, ...] | None = None
    for tp in TP_SIZES:
        if tp > len(gpus) or (shape.n_head and shape.n_head % tp):
            continue
        loads = _loads(shape, gpus[:tp], options, kv_total)
        if all(load.fits for load in loads):
            return _outcome(FitVerdict.FULL_GPU, loads, top)
        if best is None or sum(x.short for x in loads) < sum(x.short for x in best):
            best = loads
    assert best is not None  # tp = 1 always qualifies
    return _outcome(FitVerdict.DOES_NOT_FIT, best, top)


def _outcome(verdict: FitVerdict, loads: tuple[Load, ...], top: int) -> Outcome:
    missing = sum(x.short for x in loads) if verdict == FitVerdict.DOES_NOT_FIT else 0
    return Outcome(
        verdict,
        top if verdict == FitVerdict.FULL_GPU else 0,
        top,
        loads,
        sum(x.weights for x in loads),
        sum(x.kv for x in loads),
        sum(x.compute for x in loads),
        sum(x.total for x in loads),
        missing=missing,
    )
