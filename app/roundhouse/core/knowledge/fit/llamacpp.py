"""The fit of a GGUF model in llama.cpp (and Ollama, which runs llama.cpp's buffers).

Per GPU: its blocks' weights and KV cache, one compute buffer and the runtime's
footprint. In RAM: the token embeddings (always on the CPU), the blocks and output
layer not offloaded with their KV, the CPU compute buffer (a small host buffer when
every block is on the GPU), the logits and the process footprint.

With -ngl unset, the most layers that fit: all of them ("full GPU"), else the largest N
whose GPUs fit ("partial offload"; a binary search, as the GPUs' share grows with N);
with none, the CPU alone; else it does not fit, and `missing` is the smallest shortfall
among the CPU alone, all layers on the GPU, and the N around where the GPUs fill up.

With --n-cpu-moe N (ADR 48) the expert tensors of blocks 0..N-1 stay in RAM wherever
their block is; a draft model's weights and cache go to the first GPU used (-ngld's
default), and LoRA adapters are spread over the devices as the blocks are.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import accumulate

from roundhouse.api.fit import DeviceKind, FitOptions, FitVerdict
from roundhouse.core.knowledge.fit.cache import kv_layer_bytes
from roundhouse.core.knowledge.fit.compute import (
    llama_cpp_compute,
    llama_cpp_host_compute,
    llama_cpp_output,
)
from roundhouse.core.knowledge.fit.devices import RAM_FOOTPRINT, Budget
from roundhouse.core.knowledge.fit.outcome import Load, Outcome
from roundhouse.core.knowledge.fit.placement import place
from roundhouse.core.knowledge.shape import ModelShape


@dataclass(frozen=True)
class Costs:
    """A model's costs at one context and cache type, as prefix sums over the blocks."""

    n_layer: int
    weights: tuple[int, ...]  # weights[i]: blocks 0..i-1
    kv: tuple[int, ...]
    heaviest: tuple[int, ...]  # heaviest[i]: the largest block among 0..i-1
    experts: tuple[int, ...]  # experts[i]: the expert weights of blocks 0..i-1
    n_cpu_moe: int  # blocks whose experts stay in RAM, from the first
    draft: int
    adapters: int
    embeddings: int
    output: int  # the output head and final norm on a GPU, which go with the output layer
    output_ram: int  # the same in RAM: 0 extra when tied to the embeddings (one tensor)
    compute: int
    host: int
    logits: int


def split_other(shape: ModelShape) -> tuple[int, int, int]:
    """Bytes of the token embeddings, of the output layer on a GPU and in RAM.

    Unknown (both 0): half and half of other_bytes. Tied (the head is not part of
    other_bytes): the GPU gets its own copy, the CPU uses the embeddings' tensor.
    """
    embd, out = shape.embedding_bytes, shape.output_bytes
    if not embd and not out:
        embd = shape.other_bytes // 2
        return embd, shape.other_bytes - embd, shape.other_bytes - embd
    if embd + out > shape.other_bytes:  # tied
        rest = max(shape.other_bytes - embd, 0)
        return embd, out + rest, rest
    rest = shape.other_bytes - embd - out
    return embd, out + rest, out + rest


def costs(shape: ModelShape, options: FitOptions, ctx: int) -> Costs:
    kv = kv_layer_bytes(
        shape,
        ctx,
        options.n_parallel,
        options.cache_type_k,
        options.cache_type_v,
        ubatch=options.ubatch_size,
        unified=options.kv_unified,
    )
    embd, out, out_ram = split_other(shape)
    experts = shape.expert_bytes or (0,) * shape.n_layer
    return Costs(
        n_layer=shape.n_layer,
        weights=(0, *accumulate(shape.layer_bytes)),
        kv=(0, *accumulate(kv)),
        heaviest=(0, *accumulate(shape.layer_bytes, max)),
        experts=(0, *accumulate(experts)),
        n_cpu_moe=min(options.n_cpu_moe, shape.n_layer) if shape.expert_bytes else 0,
        draft=options.draft_bytes,
        adapters=options.adapter_bytes,
        embeddings=embd,
        output=out,
        output_ram=out_ram,
        compute=llama_cpp_compute(
            shape,
            ctx,
            options.ubatch_size,
            options.flash_attention,
            options.n_parallel,
            options.kv_unified,
        ),
        host=llama_cpp_host_compute(shape, options.ubatch_size),
        logits=llama_cpp_output(shape, options.n_parallel),
    )


def plan(c: Costs, budget: Budget, gpu_layers: int) -> tuple[Load, ...]:
    """The loads of every device with -ngl `gpu_layers`; RAM last."""
    p = place(c.n_layer, gpu_layers, [g.free for g in budget.gpus])
    cpu_blocks = p.first_gpu_block
    # A partial offload copies a CPU-held block's weights to the GPU for prompt batches
    # (the output layer works on one row per sequence there, too few to be copied).
    staging = c.heaviest[cpu_blocks] if cpu_blocks else 0
    moe = c.n_cpu_moe
    loads: list[Load] = []
    staged = False
    drafted = False
    for g, (gpu, (start, stop)) in enumerate(zip(budget.gpus, p.runs, strict=True)):
        has_output = p.output_gpu == g
        used = stop > start or has_output
        extra = staging if used and not staged else 0
        staged = staged or used
        draft = c.draft if used and not drafted else 0
        drafted = drafted or used
        # The experts of this run's blocks below N stay in RAM.
        kept = c.experts[min(stop, moe)] - c.experts[min(start, moe)]
        loads.append(
            Load(
                label=gpu.label,
                kind=DeviceKind.GPU,
                index=gpu.index,
                free=gpu.free,
                weights=c.weights[stop]
                - c.weights[start]
                - kept
                + (c.output if has_output else 0)
                + _share(c.adapters, stop - start, c.n_layer)
                + draft,
                kv=c.kv[stop] - c.kv[start],
                compute=c.compute + extra if used else 0,
                footprint=budget.gpu_footprint() if used else 0,
                layers=stop - start,
                capacity=gpu.total,
                note=gpu.note,
                margin=budget.margin,
            )
        )
    on_gpu = p.gpu_layers > 0
    head_ram = c.output_ram if p.output_gpu is None else 0
    # Experts in RAM of blocks on a GPU: the CPU runs them, with its full compute buffer.
    experts_ram = c.experts[max(moe, cpu_blocks)] - c.experts[cpu_blocks]
    cpu_works = bool(cpu_blocks or experts_ram) or not on_gpu
    ram = Load(
        label="RAM",
        kind=DeviceKind.CPU,
        index=None,
        free=budget.ram_free,
        weights=c.embeddings
        + c.weights[cpu_blocks]
        + head_ram
        + experts_ram
        + _share(c.adapters, cpu_blocks, c.n_layer)
        + (0 if drafted else c.draft),
        kv=c.kv[cpu_blocks],
        compute=(c.compute if cpu_works else c.host) + c.logits,
        footprint=RAM_FOOTPRINT,
        layers=cpu_blocks,
        capacity=budget.ram_total,
        margin=budget.margin,
    )
    if budget.unified and on_gpu:
        # One pool: the RAM holds the GPU's share as well (mmapped weights once).
        shares = [load for load in loads if load.layers or load.weights]
        ram = replace(
            ram,
            weights=ram.weights + sum(x.weights for x in shares),
            kv=ram.kv + sum(x.kv for x in shares),
            compute=ram.compute + sum(x.compute for x in shares),
            footprint=ram.footprint + sum(x.footprint for x in shares),
            note="unified memory: includes the GPU's share",
        )
    return (*loads, ram)


def _share(total: int, layers: int, n_layer: int) -> int:
    """A device's part of what is spread over the blocks as they are (LoRA adapters)."""
    return total * layers // n_layer if n_layer else 0


def shortfall(loads: tuple[Load, ...], unified: bool) -> int:
    if unified:
        return max(load.short for load in loads)
    return sum(load.short for load in loads)


def _outcome(
    verdict: FitVerdict, c: Costs, budget: Budget, loads: tuple[Load, ...], ngl: int
) -> Outcome:
    ram = loads[-1]
    gpu = loads[:-1]
    weights = sum(x.weights for x in gpu) + ram.weights
    kv = sum(x.kv for x in gpu) + ram.kv
    work = sum(x.compute for x in gpu) + ram.compute
    total = ram.total if budget.unified and ngl else sum(x.total for x in loads)
    if budget.unified and ngl:
        weights, kv, work = ram.weights, ram.kv, ram.compute
    missing = shortfall(loads, budget.unified) if verdict == FitVerdict.DOES_NOT_FIT else 0
    return Outcome(verdict, ngl, c.n_layer + 1, loads, weights, kv, work, total, missing)


def evaluate(shape: ModelShape, budget: Budget, options: FitOptions, ctx: int) -> Outcome:
    c = costs(shape, options, ctx)
    top = c.n_layer + 1
    if not budget.gpus:
        loads = plan(c, budget, 0)
        verdict = FitVerdict.CPU_ONLY if all(x.fits for x in loads) else FitVerdict.DOES_NOT_FIT
        return _outcome(verdict, c, budget, loads, 0)
    if options.gpu_layers is not None:
        ngl = min(options.gpu_layers, top)
        loads = plan(c, budget, ngl)
        if not all(x.fits for x in loads):
            return _outcome(FitVerdict.DOES_NOT_FIT, c, budget, loads, ngl)
        return _outcome(_verdict_for(ngl, top), c, budget, loads, ngl)
    loads = plan(c, budget, top)
    if all(x.fits for x in loads):
        return _outcome(FitVerdict.FULL_GPU, c, budget, loads, top)
    # The GPUs' share grows with -ngl: find the most layers the GPUs hold (0 always fits).
    lo, hi = 0, top - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if all(x.fits for x in plan(c, budget, mid)[:-1]):
            lo = mid
        else:
            hi = mid - 1
    candidates = {lo: plan(c, budget, lo)}
    if candidates[lo][-1].fits:
        return _outcome(_verdict_for(lo, top), c, budget, candidates[lo], lo)
    # Unified memory: the CPU alone skips the GPU's buffers, which may be what it takes.
    for ngl in (0, lo + 1, top):
        candidates.setdefault(ngl, plan(c, budget, ngl))
    if all(x.fits for x in candidates[0]):
        return _outcome(FitVerdict.CPU_ONLY, c, budget, candidates[0], 0)
    ngl = min(candidates, key=lambda n: shortfall(candidates[n], budget.unified))
    return _outcome(FitVerdict.DOES_NOT_FIT, c, budget, candidates[ngl], ngl)


def _verdict_for(ngl: int, top: int) -> FitVerdict:
    if ngl == 0:
        return FitVerdict.CPU_ONLY
    return FitVerdict.FULL_GPU if ngl >= top else FitVerdict.PARTIAL_OFFLOAD
