"""The fit of a model in mlx_lm: all of it in unified memory, under the GPU's cap.

On Apple Silicon MLX places everything (weights, KV cache, activations) in unified
memory that the GPU wires; past the Metal working-set cap it pages or fails, so the cap
minus what the GPU holds now is the limit, and the RAM must have the same bytes
available. MLX cannot split a model between GPU and CPU. Elsewhere (mlx[cpu] on
Linux) it runs on the CPU from RAM.
"""

from __future__ import annotations

from roundhouse.api.fit import DeviceKind, FitEngine, FitOptions, FitVerdict
from roundhouse.api.hardware import GpuVendor
from roundhouse.core.knowledge.fit.cache import kv_layer_bytes
from roundhouse.core.knowledge.fit.compute import mlx_compute
from roundhouse.core.knowledge.fit.devices import RAM_FOOTPRINT, Budget
from roundhouse.core.knowledge.fit.outcome import Load, Outcome
from roundhouse.core.knowledge.shape import ModelShape


def evaluate(shape: ModelShape, budget: Budget, options: FitOptions, ctx: int) -> Outcome:
    k, v = options.cache_type_k, options.cache_type_v
    kv = sum(kv_layer_bytes(shape, ctx, options.n_parallel, k, v, FitEngine.MLX))
    weights = shape.weight_bytes
    work = mlx_compute(shape, ctx)
    top = shape.n_layer + 1
    apple = [g for g in budget.gpus if g.vendor == GpuVendor.APPLE]
    ram = Load(
        label="RAM",
        kind=DeviceKind.CPU,
        index=None,
        free=budget.ram_free,
        weights=weights,
        kv=kv,
        compute=work,
        footprint=RAM_FOOTPRINT,
        capacity=budget.ram_total,
        margin=budget.margin,
        note="unified memory: includes the GPU's share" if apple else "",
    )
    if not apple:
        verdict = FitVerdict.CPU_ONLY if ram.fits else FitVerdict.DOES_NOT_FIT
        return Outcome(
            verdict, 0, top, (ram,), weights, kv, work, ram.total,
            missing=ram.short, notes=("no Apple GPU: MLX runs on the CPU",),
        )  # fmt: skip
    gpu = apple[0]
    on_gpu = Load(
        label=gpu.label,
        kind=DeviceKind.GPU,
        index=gpu.index,
        free=gpu.free,
        weights=weights,
        kv=kv,
        compute=work,
        layers=shape.n_layer,
        capacity=gpu.total,
        note=gpu.note,
        margin=budget.margin,
    )
    fits = on_gpu.fits and ram.fits
    return Outcome(
        FitVerdict.FULL_GPU if fits else FitVerdict.DOES_NOT_FIT,
        top if fits else 0,
        top,
        (on_gpu, ram),
        weights,
        kv,
        work,
        ram.total,
        missing=0 if fits else max(on_gpu.short, ram.short),
    )
