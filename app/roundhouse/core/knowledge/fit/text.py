"""The words of a fit report: its one-line summary and the assumptions it rests on."""

from __future__ import annotations

from roundhouse.api.fit import FitEngine, FitOptions, FitVerdict
from roundhouse.base.units import format_bytes
from roundhouse.core.knowledge.fit.devices import GPU_FOOTPRINT, RAM_FOOTPRINT, Budget
from roundhouse.core.knowledge.fit.outcome import Outcome
from roundhouse.core.knowledge.shape import ModelShape

_GGUF_ENGINES = (FitEngine.LLAMA_CPP, FitEngine.OLLAMA)


def _of(need: int, free: int) -> str:
    return f"{format_bytes(need)} of {format_bytes(free)} free"


def summary(outcome: Outcome, budget: Budget) -> str:
    gpus = [x for x in outcome.gpu_loads() if x.total]
    ram = [x for x in outcome.loads if x.index is None]
    if outcome.verdict == FitVerdict.FULL_GPU:
        need, free = sum(x.total for x in gpus), sum(x.free for x in gpus)
        where = "the GPU" if len(gpus) == 1 else f"{len(gpus)} GPUs"
        if budget.unified:
            where = "the GPU's share of unified memory"
        return f"Fits on {where}: {_of(need, free)}."
    if outcome.verdict == FitVerdict.PARTIAL_OFFLOAD:
        need, free = sum(x.total for x in gpus), sum(x.free for x in gpus)
        rest = ram[0].total if ram else 0
        return (
            f"Partly on the GPU: {outcome.gpu_layers} of {outcome.total_layers} layers "
            f"({_of(need, free)}), the rest on the CPU ({format_bytes(rest)} of RAM); "
            "slower than all on the GPU."
        )
    if outcome.verdict == FitVerdict.CPU_ONLY:
        load = ram[0]
        return f"Runs on the CPU only: {_of(load.total, load.free)} in RAM."
    if outcome.notes and not outcome.loads:
        return f"Does not fit: {outcome.notes[0]}."
    # Unified memory is one pool: the RAM's free memory is all there is.
    free = ram[0].free if budget.unified and ram else sum(x.free for x in outcome.loads)
    return (
        f"Does not fit: it needs {format_bytes(outcome.total)} and "
        f"{format_bytes(free)} is free in all ({format_bytes(outcome.missing)} short, "
        f"keeping {format_bytes(budget.margin)} free per device)."
    )


def assumptions(
    shape: ModelShape, options: FitOptions, engine: FitEngine, ctx: int, budget: Budget
) -> list[str]:
    said = [f"Engine: {engine.value}."]
    trained = f" (trained for {shape.context_length:,})" if shape.context_length else ""
    per = f" x {options.n_parallel} requests at once" if options.n_parallel > 1 else ""
    said.append(f"Context: {ctx:,} tokens per request{per}{trained}.")
    if ctx > shape.context_length > 0:
        said.append("That is past the trained context: answers may degrade without RoPE scaling.")
    if engine in _GGUF_ENGINES:
        said.append(
            f"KV cache: K {options.cache_type_k}, V {options.cache_type_v}; flash attention "
            f"{'on' if options.flash_attention else 'off'}; micro-batch {options.ubatch_size}."
        )
    elif engine == FitEngine.MLX:
        said.append("MLX keeps the KV cache in the model's dtype and all of it in memory.")
    else:
        said.append(
            "vLLM/SGLang: weights x 1.2 + 2 GiB per GPU plus the KV cache, inside "
            f"{options.gpu_memory_utilization:.0%} of each GPU, which must be free."
        )
    if shape.sliding_window and any(shape.swa_layers):
        said.append(f"Sliding-window layers cache at most {shape.sliding_window:,} tokens.")
    if shape.kv_lora_rank:
        said.append("MLA: each layer caches one compressed vector per token.")
    if not shape.feed_forward_length and engine != FitEngine.VLLM:
        said.append(
            "Feed-forward width not given: compute buffers use one derived from a block's weights."
        )
    if engine in _GGUF_ENGINES or engine == FitEngine.MLX:
        footprint = "" if budget.unified else f" and {format_bytes(GPU_FOOTPRINT)} per GPU"
        said.append(
            f"Kept free on every device: {format_bytes(budget.margin)}; runtime footprint "
            f"{format_bytes(RAM_FOOTPRINT)} of RAM{footprint}."
        )
    said.append("Against free memory now, not total: other programs' use counts.")
    said.extend(note[0].upper() + note[1:] + "." for note in budget.notes)
    return said
