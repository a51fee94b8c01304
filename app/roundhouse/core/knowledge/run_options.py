"""An engine run's fit options: the instance's choices, and the engine's where it chose."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundhouse.api.engines import FlashAttention, InstanceOptions
from roundhouse.api.fit import CacheType, FitOptions
from roundhouse.core.knowledge.shape import ModelShape

if TYPE_CHECKING:
    # The load report's reader comes with the estimator (numpy); this module stays light
    # for the instances that import it at start.
    from roundhouse.core.knowledge.fit.actual import LoadFacts

# llama.cpp's own way to say "every layer".
ALL_LAYERS = 999


def requested_layers(options: InstanceOptions, shape: ModelShape | None) -> int | None:
    """The -ngl asked for: a count, every layer for "all", None when left to the engine."""
    value = options.n_gpu_layers
    if value == "all":
        return shape.n_layer + 1 if shape is not None else ALL_LAYERS
    if isinstance(value, int) and value >= 0:
        return value
    return None


def fit_options(options: InstanceOptions, facts: LoadFacts, shape: ModelShape) -> FitOptions:
    """The fit options of this run: the instance's choices, the engine's where it chose."""
    n_parallel = options.parallel or facts.n_seq or 1
    total_ctx = options.ctx_size or facts.n_ctx
    context = max(total_ctx // n_parallel, 1) if total_ctx else None
    if options.flash_attn == FlashAttention.ON:
        flash = True
    elif options.flash_attn == FlashAttention.OFF:
        flash = False
    else:
        flash = facts.flash_attention if facts.flash_attention is not None else True
    return FitOptions(
        context_length=context,
        n_parallel=n_parallel,
        cache_type_k=_cache_type(options.cache_type_k),
        cache_type_v=_cache_type(options.cache_type_v),
        flash_attention=flash,
        ubatch_size=facts.n_ubatch or 512,
        kv_unified=bool(facts.kv_unified),
        gpu_layers=requested_layers(options, shape),
        n_cpu_moe=cpu_moe_blocks(options, shape),
    )


def cpu_moe_blocks(options: InstanceOptions, shape: ModelShape) -> int:
    """The blocks whose experts stay in RAM: N, or every block for "all" (--cpu-moe)."""
    value = options.n_cpu_moe
    if value == "all":
        return shape.n_layer
    return value or 0


def _cache_type(value: str | None) -> CacheType:
    try:
        return CacheType((value or "f16").lower())
    except ValueError:
        return CacheType.F16
