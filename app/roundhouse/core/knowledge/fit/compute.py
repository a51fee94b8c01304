"""Engines' work buffers: llama.cpp's compute graph, its host-side buffers, MLX, vLLM.

llama.cpp reserves one compute buffer per backend, sized by ggml's graph allocator for
the worst micro-batch (`-ub`, 512 tokens) against the full cache. Intermediates are
f32; the peak is the larger of two stages of one block (blocks reuse the memory):

- feed-forward: the micro-batch's gate, up and their product (3 x n_ff) and about four
  n_embd-wide activations: ub x 4 x (3 n_ff + 4 n_embd) bytes;
- attention: Q, K, V and the same four activations, ub x 4 x (q + k + v + 4 n_embd),
  plus, without flash attention, the scores KQ: ub x n_kv x n_head x 4 bytes;
- both hold the mask: ub x n_kv x 2 bytes (f16) with flash attention, 4 (f32) without.

n_kv is the cells one sequence sees (ctx per request; with --kv-unified, the whole shared
cache; a windowed layer's cells when every layer is windowed). Logits take one row:
llama-server reserves a single output.

Measured with llama-server (this repository's test build, CPU backend, F16 weights in
sparse files of the real shapes; `tests/unit/knowledge/test_fit_real_load.py` reruns it):

| shape (n_embd, n_ff, heads) | ctx | flash | measured MiB | formula |
|---|---|---|---|---|
| Llama-3.1-8B (4096, 14336, 32/8) | 2k / 8k / 32k | off | 176 / 572 / 2156 | same |
| Llama-3.1-8B | 2k / 8k / 32k | on | 118 / 124 / 148 | same |
| Qwen2.5-7B (3584, 18944, 28/4) | 4k / 16k | off | 269 / 965 | same |
| Qwen2.5-7B | 4k / 16k | on | 143 / 155 | same |
| gemma-2-9B (3584, 14336, 16/8, hd 256) | 4k / 16k | on | 121 / 134 | 116 / 128 |
| gemma-2-9B | 4k / 16k | off | 197 / 592 | 180 / 588 |
| DeepSeek-V2-Lite (MLA, MoE) | 4k / 16k | on / off | 84 / 598 | 86 / 595 |

Published: Llama-3.1-8B Q4_K_M fully on an RTX 4090, one cache of 8192 cells shared by 4
sequences, no flash attention: "CUDA0 compute buffer size = 560.00 MiB", "CUDA_Host
compute buffer size = 24.01 MiB" (formula: 572 and 24). Ollama's estimate in the same
log puts the graph at 560.0 MiB fully offloaded and 677.5 MiB partly offloaded: a partial
offload also copies CPU-held weights to the GPU for prompt processing, which we count as
one more block.
"""

from __future__ import annotations

from roundhouse.api.fit import FitEngine
from roundhouse.core.knowledge.fit.cache import is_windowed, layer_cells
from roundhouse.core.knowledge.shape import ModelShape

F32 = 4
MIB = 1024**2
GIB = 1024**3
# mlx_lm prefills in steps of this many tokens (generate_step's prefill_step_size), in
# the model's dtype (2 bytes).
MLX_PREFILL_STEP = 2048
# GPUStack's rule for vLLM and SGLang: weights x 1.2 (activations, CUDA graphs) + 2 GiB.
SERVER_WEIGHT_FACTOR = 0.2
SERVER_FRAMEWORK_BYTES = 2 * GIB


def feed_forward(shape: ModelShape) -> int:
    """The FFN width; when the shape lacks it, from a dense block's weights: what the
    attention projections leave of its parameters is 3 x n_embd x n_ff (Llama-3.1-8B
    Q4_K_M gives 13972 for 14336); else 4 x n_embd."""
    if shape.feed_forward_length:
        return shape.feed_forward_length
    guess = 4 * shape.n_embd
    if shape.n_expert or not shape.parameter_count or not shape.n_layer or not shape.n_embd:
        return guess
    bytes_per_weight = shape.weight_bytes / shape.parameter_count
    params = sum(shape.layer_bytes) / shape.n_layer / bytes_per_weight
    q, k, v = attention_widths(shape)
    attention = shape.n_embd * (2 * q + k + v)
    derived = int((params - attention) / (3 * shape.n_embd))
    return derived if shape.n_embd <= derived <= 8 * shape.n_embd else guess


def attention_widths(shape: ModelShape) -> tuple[int, int, int]:
    """Q, K and V widths of one token in one layer (MLA: the absorbed latent form)."""
    if shape.kv_lora_rank:
        latent = shape.kv_lora_rank + (shape.rope_dim or 0)
        return shape.n_head * latent, latent, shape.n_head * shape.kv_lora_rank
    k = shape.n_head_kv * shape.key_length
    return shape.n_head * shape.key_length, k, shape.n_head_kv * shape.value_length


def graph_n_kv(shape: ModelShape, ctx: int, ubatch: int, n_parallel: int, unified: bool) -> int:
    """The cells attention runs over in the worst layer: one sequence's, or all of a
    unified cache's."""
    seqs = n_parallel if unified else 1
    if shape.n_layer and all(is_windowed(shape, i) for i in range(shape.n_layer)):
        return layer_cells(shape, 0, ctx, seqs, FitEngine.LLAMA_CPP, ubatch, unified)
    return ctx * seqs


def llama_cpp_compute(
    shape: ModelShape,
    ctx: int,
    ubatch: int,
    flash_attention: bool,
    n_parallel: int = 1,
    unified: bool = False,
) -> int:
    """One backend's compute buffer in llama.cpp (see the module's docstring)."""
    ub = max(1, min(ubatch, ctx))
    n_kv = graph_n_kv(shape, ctx, ub, n_parallel, unified)
    embd = 4 * shape.n_embd
    mask = ub * n_kv * (2 if flash_attention else F32)
    ffn = ub * F32 * (3 * feed_forward(shape) + embd)
    q, k, v = attention_widths(shape)
    attention = ub * F32 * (q + k + v + embd)
    if not flash_attention:
        attention += ub * n_kv * shape.n_head * F32
    return max(ffn, attention) + mask


def llama_cpp_host_compute(shape: ModelShape, ubatch: int) -> int:
    """The CPU-side buffer when every block is on the GPU: the micro-batch's embeddings
    and their staging copies (the published 24.01 MiB for Llama-3.1-8B at -ub 512)."""
    return 3 * ubatch * shape.n_embd * F32


def llama_cpp_output(shape: ModelShape, n_parallel: int) -> int:
    """The logits buffer in RAM: one row of the vocabulary per sequence."""
    return n_parallel * shape.vocab_size * F32


def mlx_compute(shape: ModelShape, ctx: int) -> int:
    """mlx_lm's activations for one prefill step (fused attention keeps no scores)."""
    step = min(ctx, MLX_PREFILL_STEP)
    q, k, v = attention_widths(shape)
    ffn = step * 2 * (3 * feed_forward(shape) + 4 * shape.n_embd)
    attention = step * 2 * (q + k + v + 4 * shape.n_embd)
    return max(ffn, attention) + shape.vocab_size * F32


def server_activation(weights: int) -> int:
    """vLLM/SGLang activations and CUDA graphs, as GPUStack estimates them."""
    return int(weights * SERVER_WEIGHT_FACTOR)
