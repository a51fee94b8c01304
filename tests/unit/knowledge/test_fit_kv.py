"""KV cache sizes against hand-computed values: GQA, cache types, sliding window, MLA."""

from __future__ import annotations

from dataclasses import replace

import pytest

from roundhouse.api.fit import CacheType, FitEngine
from roundhouse.core.knowledge.fit import kv_bytes_per_token, kv_layer_bytes
from roundhouse.core.knowledge.shape import ModelShape
from tests.unit.knowledge.test_fit_cases import (
    GIB,
    KIB,
    MIB,
    deepseek_v2_lite,
    gemma_2_9b,
    llama_3_1_8b_q4_k_m,
)

F16 = CacheType.F16


def kv(
    shape: ModelShape,
    ctx: int,
    n_parallel: int = 1,
    k: CacheType = F16,
    v: CacheType = F16,
    engine: FitEngine = FitEngine.LLAMA_CPP,
    unified: bool = False,
) -> int:
    return sum(kv_layer_bytes(shape, ctx, n_parallel, k, v, engine, 512, unified))


def test_llama_3_1_8b_costs_128_kib_a_token() -> None:
    # 32 layers x 8 KV heads x (128 + 128) x 2 bytes = 131072 bytes.
    shape = llama_3_1_8b_q4_k_m()
    assert kv_bytes_per_token(shape, F16, F16) == 128 * KIB
    assert kv(shape, 8192) == 1 * GIB
    assert kv(shape, 32768) == 4 * GIB


def test_parallel_requests_each_hold_their_context() -> None:
    # The published load: "n_ctx = 8192", "n_seq_max = 4", "KV self size = 1024.00 MiB".
    shape = llama_3_1_8b_q4_k_m()
    assert kv(shape, 2048, n_parallel=4) == 1024 * MIB
    assert kv(shape, 8192, n_parallel=4) == 4 * GIB


@pytest.mark.parametrize(
    ("cache", "mib"),
    [
        (CacheType.F32, 2048),
        (CacheType.BF16, 1024),
        (CacheType.Q8_0, 544),  # 34 bytes per 32 elements (llama-server: 34.00 MiB / 2 layers)
        (CacheType.Q4_0, 288),  # 18 bytes per 32 elements
        (CacheType.Q5_1, 384),
    ],
)
def test_cache_types_take_their_block_sizes(cache: CacheType, mib: int) -> None:
    assert kv(llama_3_1_8b_q4_k_m(), 8192, k=cache, v=cache) == mib * MIB


def test_k_and_v_types_count_apart() -> None:
    assert kv(llama_3_1_8b_q4_k_m(), 8192, k=CacheType.Q8_0, v=F16) == (272 + 512) * MIB


def test_gemma_2_windowed_layers_stop_at_the_window() -> None:
    shape = gemma_2_9b()
    per_layer_token = 8 * (256 + 256) * 2  # 8 KiB
    assert kv_bytes_per_token(shape, F16, F16) == 42 * per_layer_token
    # At 8192: 21 global layers hold 8192 tokens; 21 windowed hold 4096 + a 512 micro-batch.
    expected = 21 * 8192 * per_layer_token + 21 * 4608 * per_layer_token
    assert kv(shape, 8192) == expected == 2100 * MIB
    # vLLM and MLX keep exactly the window.
    assert kv(shape, 8192, engine=FitEngine.VLLM) == 21 * (8192 + 4096) * per_layer_token
    # Below the window every layer holds the whole context.
    assert kv(shape, 2048) == 42 * 2048 * per_layer_token


def test_windowed_cells_as_llama_server_allocates_them() -> None:
    # Measured with llama-server on a two-layer gemma-2 shape (layer 0 windowed), ctx 16384
    # per sequence: "KV buffer size = 128.00 MiB" (full) and "36.00 MiB" (windowed, one
    # sequence); 72.00 MiB for two sequences; 68.00 MiB for two with --kv-unified.
    two = replace(gemma_2_9b(), n_layer=2, swa_layers=(True, False), layer_bytes=(1, 1))
    full, windowed = kv_layer_bytes(two, 16384, 1, F16, F16)[::-1]
    assert (full, windowed) == (128 * MIB, 36 * MIB)
    assert kv_layer_bytes(two, 8192, 2, F16, F16)[0] == 72 * MIB
    assert kv_layer_bytes(two, 8192, 2, F16, F16, unified=True)[0] == 68 * MIB


def test_deepseek_mla_caches_one_latent_per_token() -> None:
    shape = deepseek_v2_lite()
    # (kv_lora_rank 512 + rope 64) x 2 bytes per layer, no separate V: llama-server on a
    # two-layer DeepSeek-V2-Lite shape: "KV buffer size = 9.00 MiB" at ctx 4096.
    assert kv_bytes_per_token(shape, F16, F16) == 27 * 576 * 2
    assert kv(replace(shape, n_layer=2, layer_bytes=(1, 1)), 4096) == 9 * MIB
    assert kv(shape, 4096) == 27 * 576 * 2 * 4096
    # Without MLA the same heads would cache 16 x (192 + 128) per layer: 9x more.
    plain = replace(shape, kv_lora_rank=None, n_head_kv=16)
    assert kv(plain, 4096) > 8 * kv(shape, 4096)


def test_layers_without_kv_heads_cache_nothing() -> None:
    # A hybrid model: recurrent layers (0 KV heads) between attention layers.
    shape = replace(llama_3_1_8b_q4_k_m(), n_head_kv_layers=(0, 0, 0, 8) * 8)
    assert kv(shape, 8192) == GIB // 4


def test_mlx_grows_its_cache_in_steps_of_256() -> None:
    shape = llama_3_1_8b_q4_k_m()
    assert kv(shape, 1000, engine=FitEngine.MLX) == 1024 * 128 * KIB
    # vLLM's fp8 cache stands in for the quantized llama.cpp types.
    fp8 = kv(shape, 8192, k=CacheType.Q8_0, v=CacheType.Q8_0, engine=FitEngine.VLLM)
    assert fp8 == GIB // 2
