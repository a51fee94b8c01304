"""KV cache size: per layer, per token, for each cache type; sliding-window and MLA aware.

Per layer and cached token, a layer stores `n_head_kv * key_length` K elements and
`n_head_kv * value_length` V elements, each at its cache type's size. Quantized types
store blocks of 32 elements (q8_0: 34 bytes, q4_0: 18 bytes, as ggml's block_q8_0 and
block_q4_0 lay them out).

How many tokens a layer caches (its "cells"), with `ctx` tokens per request and
`n_parallel` requests:
- a full-attention layer: ctx x n_parallel;
- a sliding-window layer: n_parallel x min(ctx, window + ubatch) in llama.cpp (its
  iSWA cache keeps one micro-batch beyond the window: measured with llama-server, gemma-2
  shape, ctx 16384, window 4096, -ub 512: 4608 cells per sequence; with --kv-unified
  min(ctx x n_parallel, window x n_parallel + ubatch): 8704 cells for 2 sequences);
  n_parallel x min(ctx, window) in vLLM and MLX, whose window caches keep the window;
- MLA (DeepSeek V2/V3, kv_lora_rank set): one compressed latent of kv_lora_rank +
  rope_dim elements per token, and no separate V: llama.cpp stores only that as K
  (measured: DeepSeek-V2-Lite shape, 576 f16 elements = 1152 bytes per token and layer),
  and vLLM's MLA cache is the same latent.
A layer with 0 KV heads in `n_head_kv_layers` (a recurrent layer of a hybrid model)
caches nothing.
"""

from __future__ import annotations

from functools import lru_cache

from roundhouse.api.fit import UNQUANTIZED_CACHE_TYPES, CacheType, FitEngine
from roundhouse.core.knowledge.shape import ModelShape

# Bytes per 32 elements (quantized types are blocks of 32: ggml's block layouts).
CACHE_TYPE_BYTES_PER_32: dict[CacheType, int] = {
    CacheType.F32: 128,
    CacheType.F16: 64,
    CacheType.BF16: 64,
    CacheType.Q8_0: 34,
    CacheType.Q5_1: 24,
    CacheType.Q5_0: 22,
    CacheType.Q4_1: 20,
    CacheType.Q4_0: 18,
    CacheType.IQ4_NL: 18,
}

# mlx_lm grows its cache in steps of this many tokens (mlx_lm.models.cache.KVCache.step).
MLX_CACHE_STEP = 256


def bytes_per_32(cache_type: CacheType, engine: FitEngine) -> int:
    """Bytes 32 cached elements take with this engine.

    vLLM and SGLang keep the cache in the model's dtype ("auto": 2 bytes an element) or
    in fp8 (1 byte), which stands for any quantized llama.cpp type there.
    """
    if engine in (FitEngine.VLLM, FitEngine.SGLANG):
        return 64 if cache_type in UNQUANTIZED_CACHE_TYPES else 32
    return CACHE_TYPE_BYTES_PER_32[cache_type]


def layer_elements(shape: ModelShape, layer: int) -> tuple[int, int]:
    """K and V elements one layer caches per token."""
    if shape.kv_lora_rank:
        return shape.kv_lora_rank + (shape.rope_dim or 0), 0
    heads = shape.n_head_kv
    if shape.n_head_kv_layers and layer < len(shape.n_head_kv_layers):
        heads = shape.n_head_kv_layers[layer]
    return heads * shape.key_length, heads * shape.value_length


def is_windowed(shape: ModelShape, layer: int) -> bool:
    if not shape.sliding_window:
        return False
    return layer < len(shape.swa_layers) and shape.swa_layers[layer]


def layer_cells(
    shape: ModelShape,
    layer: int,
    ctx: int,
    n_parallel: int,
    engine: FitEngine,
    ubatch: int,
    unified: bool = False,
) -> int:
    """Tokens the layer's cache holds, over all parallel requests."""
    per_request = ctx
    if engine == FitEngine.MLX:
        per_request = -(-ctx // MLX_CACHE_STEP) * MLX_CACHE_STEP
    if not is_windowed(shape, layer):
        return per_request * n_parallel
    window = shape.sliding_window or 0
    if engine not in (FitEngine.LLAMA_CPP, FitEngine.OLLAMA):
        return min(per_request, window) * n_parallel
    if unified:  # one shared cache: every sequence's window plus one micro-batch
        return min(ctx * n_parallel, window * n_parallel + ubatch)
    return min(per_request, window + ubatch) * n_parallel


def kv_layer_bytes(
    shape: ModelShape,
    ctx: int,
    n_parallel: int,
    k_type: CacheType,
    v_type: CacheType,
    engine: FitEngine = FitEngine.LLAMA_CPP,
    ubatch: int = 512,
    unified: bool = False,
) -> tuple[int, ...]:
    """The KV cache of each layer in bytes, for `ctx` tokens x `n_parallel` requests."""
    k_size, v_size = bytes_per_32(k_type, engine), bytes_per_32(v_type, engine)
    kinds, of_layer = _layer_kinds(shape)
    sizes = []
    for k, v, first in kinds:
        cells = layer_cells(shape, first, ctx, n_parallel, engine, ubatch, unified)
        sizes.append(cells * (k * k_size + v * v_size) // 32)
    return tuple(sizes[kind] for kind in of_layer)


@lru_cache(maxsize=64)
def _layer_kinds(shape: ModelShape) -> tuple[tuple[tuple[int, int, int], ...], tuple[int, ...]]:
    """The distinct (K, V, a layer of that kind) triples, and each layer's kind.

    Most models have one or two kinds (full and windowed), so the cache is sized per kind.
    """
    kinds: dict[tuple[int, int, bool], int] = {}
    firsts: list[tuple[int, int, int]] = []
    of_layer = []
    for layer in range(shape.n_layer):
        k, v = layer_elements(shape, layer)
        key = (k, v, is_windowed(shape, layer))
        if key not in kinds:
            kinds[key] = len(firsts)
            firsts.append((k, v, layer))
        of_layer.append(kinds[key])
    return tuple(firsts), tuple(of_layer)


def kv_bytes_per_token(shape: ModelShape, k_type: CacheType, v_type: CacheType) -> int:
    """What one more token of context costs in all layers (windowed layers included)."""
    k_size, v_size = CACHE_TYPE_BYTES_PER_32[k_type], CACHE_TYPE_BYTES_PER_32[v_type]
    total = 0
    for layer in range(shape.n_layer):
        k, v = layer_elements(shape, layer)
        total += k * k_size + v * v_size
    return total // 32
