"""A GGUF header as a ModelShape: weights per block, heads, sliding window, MLA, experts.

Sliding-window attention is read the way llama.cpp's loader decides it:
- the window is `<arch>.attention.sliding_window` (gemma2 defaults to 4096 and llama4's
  chunked attention to 8192 when the key is missing; 0 means no window);
- which layers use it comes from `<arch>.attention.sliding_window_pattern` when present
  (a period n, or one bool per layer), else from the period llama.cpp sets in code for
  the architecture (SWA_PERIODS); with period n, layer i is windowed when i % n < n - 1;
- any other model with a window is taken as full attention on every layer: phi3 writes a
  window llama.cpp ignores, and counting too much cache is the safe mistake.
"""

from __future__ import annotations

import re

from roundhouse.core.knowledge.gguf.errors import GgufError
from roundhouse.core.knowledge.gguf.header import GgufHeader
from roundhouse.core.knowledge.gguf.summary import layer_max, quantization, vocab_size
from roundhouse.core.knowledge.shape import ModelShape, WeightFormat

# `hparams.set_swa_pattern(n)` in llama.cpp's llama_model::load_hparams, per architecture.
SWA_PERIODS = {
    "gemma2": 2,
    "gemma3": 6,
    "gemma3n": 5,
    "gemma-embedding": 6,
    "cohere2": 4,
    "gpt-oss": 2,
    "llama4": 4,
    "exaone4": 4,
}
SWA_DEFAULT_WINDOWS = {"gemma2": 4096, "llama4": 8192}
_BLOCK = re.compile(r"blk\.(\d+)\.")
# The expert tensors --n-cpu-moe and --cpu-moe keep in RAM (llama.cpp's LLM_FFN_EXPS_REGEX,
# "\.ffn_(up|down|gate)_(ch|)exps", and the fused gate_up of newer conversions).
_EXPERTS = re.compile(r"blk\.(\d+)\.ffn_(up|down|gate|gate_up)_(ch)?exps\.")
MAX_LAYERS = 4096  # the largest models have under 200
NOT_A_MODEL = "choose the model's main .gguf file"


def shape_from_gguf(header: GgufHeader) -> ModelShape:
    """The memory-relevant shape of the model whose header this is."""
    arch = _architecture(header)
    n_layer, layer_bytes, other_bytes = _weights(header)
    n_embd = header.int_value(f"{arch}.embedding_length") or _embedding_rows(header)
    n_head = layer_max(header, "attention.head_count") or 0
    kv_layers = header.int_list(f"{arch}.attention.head_count_kv")
    n_head_kv = layer_max(header, "attention.head_count_kv")
    n_head_kv = n_head if n_head_kv is None else n_head_kv
    head_dim = n_embd // n_head if n_head else 0
    kv_lora_rank = header.int_value(f"{arch}.attention.kv_lora_rank") or None
    window, swa_layers = sliding_window(header, n_layer)
    by_name = {t.name: t.n_bytes for t in header.tensors}
    embedding, output = by_name.get("token_embd.weight", 0), by_name.get("output.weight", 0)
    sizes = (n_embd, n_head, n_head_kv, head_dim, kv_lora_rank or 0, window or 0)
    if min(sizes) < 0 or min(kv_layers or [0]) < 0:
        raise GgufError("it gives a negative size for its attention or embeddings")
    return ModelShape(
        format=WeightFormat.GGUF,
        architecture=arch,
        n_layer=n_layer,
        n_embd=n_embd,
        n_head=n_head,
        n_head_kv=n_head_kv,
        key_length=header.int_value(f"{arch}.attention.key_length") or head_dim,
        value_length=header.int_value(f"{arch}.attention.value_length") or head_dim,
        context_length=header.int_value(f"{arch}.context_length") or 0,
        layer_bytes=layer_bytes,
        other_bytes=other_bytes,
        vocab_size=vocab_size(header) or 0,
        parameter_count=sum(t.n_elements for t in header.tensors),
        quantization=quantization(header),
        sliding_window=window,
        swa_layers=swa_layers,
        kv_lora_rank=kv_lora_rank,
        # Only MLA caches the rope part apart; for other models the key length says it all.
        rope_dim=header.int_value(f"{arch}.rope.dimension_count") if kv_lora_rank else None,
        n_expert=header.int_value(f"{arch}.expert_count") or 0,
        n_expert_used=header.int_value(f"{arch}.expert_used_count") or 0,
        n_head_kv_layers=tuple(kv_layers[:n_layer]) if kv_layers else (),
        feed_forward_length=_widest_feed_forward(header, arch),
        embedding_bytes=embedding,
        expert_bytes=_expert_bytes(header, n_layer),
        # Tied embeddings: the head is the embedding table, loaded again for the GPU.
        output_bytes=output if output else embedding,
    )


def _widest_feed_forward(header: GgufHeader, arch: str) -> int:
    """What a token's feed-forward is widest at: n_ff for a dense model; for a mixture of
    experts, the experts used times their width plus the shared experts'."""
    dense = layer_max(header, "feed_forward_length") or 0
    expert = header.int_value(f"{arch}.expert_feed_forward_length") or 0
    used = header.int_value(f"{arch}.expert_used_count") or 0
    if not (expert and used):
        return dense
    shared_width = header.int_value(f"{arch}.expert_shared_feed_forward_length") or expert
    shared = (header.int_value(f"{arch}.expert_shared_count") or 0) * shared_width
    return max(dense, used * expert + shared)


def sliding_window(header: GgufHeader, n_layer: int) -> tuple[int | None, tuple[bool, ...]]:
    """The attention window and, per layer, whether the layer uses it."""
    arch = header.architecture or ""
    window = header.int_value(f"{arch}.attention.sliding_window")
    if window is None:
        window = SWA_DEFAULT_WINDOWS.get(arch)
    if not window:
        return None, ()
    key = f"{arch}.attention.sliding_window_pattern"
    pattern = header.get(key)
    if isinstance(pattern, list) and all(isinstance(v, bool) for v in pattern):
        flags = [bool(v) for v in pattern[:n_layer]]
        return window, tuple(flags + [False] * (n_layer - len(flags)))
    period = header.int_value(key) or SWA_PERIODS.get(arch)
    if not period:
        return window, (False,) * n_layer
    return window, tuple(i % period < period - 1 for i in range(n_layer))


def _architecture(header: GgufHeader) -> str:
    if header.str_value("general.type") == "adapter":
        raise GgufError("it is a LoRA adapter, not a model", advice="choose the base model")
    arch = header.architecture
    if not arch:
        raise GgufError("it does not say its architecture (general.architecture)")
    if arch == "clip":
        raise GgufError("it is a vision projector (mmproj), not a model", advice=NOT_A_MODEL)
    return arch


def _weights(header: GgufHeader) -> tuple[int, tuple[int, ...], int]:
    """The block count, the bytes of each block's tensors, and the bytes of the rest."""
    declared = header.int_value(header.arch_key("block_count"))
    blocks: dict[int, int] = {}
    other = 0
    for tensor in header.tensors:
        match = _BLOCK.match(tensor.name)
        if match is None:
            other += tensor.n_bytes
        else:
            index = int(match[1])
            blocks[index] = blocks.get(index, 0) + tensor.n_bytes
    n_layer = declared if declared is not None else max(blocks, default=-1) + 1
    if n_layer <= 0 and not blocks:
        raise GgufError("it has no layers", advice=NOT_A_MODEL)
    if not 0 <= n_layer <= MAX_LAYERS:
        raise GgufError(f"it claims {n_layer:,} layers (at most {MAX_LAYERS:,} allowed)")
    # Blocks past the declared count (a multi-token-prediction head, say) are not layers
    # the context runs through: their weights still count, as "other".
    other += sum(b for i, b in blocks.items() if i >= n_layer)
    return n_layer, tuple(blocks.get(i, 0) for i in range(n_layer)), other


def _expert_bytes(header: GgufHeader, n_layer: int) -> tuple[int, ...]:
    """Each block's expert weights; empty when the model has none."""
    experts = [0] * n_layer
    for tensor in header.tensors:
        match = _EXPERTS.match(tensor.name)
        if match is not None and int(match[1]) < n_layer:
            experts[int(match[1])] += tensor.n_bytes
    return tuple(experts) if any(experts) else ()


def _embedding_rows(header: GgufHeader) -> int:
    for tensor in header.tensors:
        if tensor.name == "token_embd.weight" and tensor.shape:
            return tensor.shape[0]
    return 0
