"""A transformers config.json (safetensors or MLX repo) as a ModelShape for the fit.

Read from the config: layers, widths, heads (GQA), head_dim, the trained context, the
vocabulary, sliding-window layers (`layer_types`, else the model family's pattern:
gemma2 alternates, gemma3 and cohere2 keep one global layer in 6 and 4, mistral and
mixtral window every layer), mixtures of experts (mixtral, qwen_moe, deepseek), MLA
(DeepSeek: kv_lora_rank, qk_rope_head_dim), and `text_config` for multimodal models
(the language model's section wins, the top level fills the gaps).

The weights' size comes from the caller (the sum of the safetensors files). It is split
as: the token embeddings and, unless tied, the output head at vocab x hidden x bytes per
weight (the config's dtype; MLX's quantization, which packs `bits` per weight plus a
16-bit scale and bias per group); the rest evenly over the layers, since one layer of a
transformer is like the next. The parameter count is computed from the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping

from roundhouse.core.errors import InvalidInputError
from roundhouse.core.knowledge.shape import ModelShape, WeightFormat

_DTYPE_BYTES = {"float32": 4.0, "float16": 2.0, "bfloat16": 2.0, "float8_e4m3fn": 1.0}
_DTYPE_NAMES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}
# Model types whose config class ties the output head to the embeddings by default.
_TIED_BY_DEFAULT = {"gemma", "gemma2", "gemma3", "gemma3_text", "gemma3n_text"}
# Period of the global (full-attention) layers in families that interleave them.
_SWA_PERIODS = {"gemma3": 6, "gemma3_text": 6, "cohere2": 4}
_ALL_WINDOWED = {"mistral", "mixtral"}


class _Config:
    """Lookups in the text section first, then the top level, with clear errors."""

    def __init__(self, config: Mapping[str, object]) -> None:
        text = config.get("text_config")
        self.sections = [text, config] if isinstance(text, Mapping) else [config]

    def get(self, *keys: str) -> object:
        for section in self.sections:
            for key in keys:
                if section.get(key) is not None:
                    return section[key]
        return None

    def int(self, *keys: str, default: int | None = None) -> int:
        value = self.get(*keys)
        if value is None and default is not None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            shown = "missing" if value is None else f"{value!r}"
            raise InvalidInputError(
                f"config.json: {keys[0]} is {shown}, not a count: choose a text-generation "
                "model's repository (its config.json says how the model is built)"
            )
        return value


def shape_from_hf_config(
    config: Mapping[str, object],
    weight_bytes: int,
    fmt: WeightFormat,
    quantization: str | None = None,
) -> ModelShape:
    """The memory-relevant shape of the model this config.json describes."""
    if weight_bytes <= 0:
        raise InvalidInputError("the model's weight files have no size: list its files again")
    c = _Config(config)
    arch = str(c.get("model_type") or "unknown")
    n_layer = c.int("num_hidden_layers", "n_layer", "num_layers")
    n_embd = c.int("hidden_size", "n_embd", "d_model")
    n_head = c.int("num_attention_heads", "n_head")
    if not (n_layer and n_embd and n_head):
        raise InvalidInputError("config.json gives a model without layers, width or heads")
    n_head_kv = c.int("num_key_value_heads", "num_kv_heads", default=n_head)
    head_dim = c.int("head_dim", default=n_embd // n_head)
    kv_lora = c.int("kv_lora_rank", default=0)
    rope_dim = c.int("qk_rope_head_dim", default=0)
    key_length = value_length = head_dim
    if kv_lora:
        key_length = c.int("qk_nope_head_dim", default=0) + rope_dim
        value_length = c.int("v_head_dim", default=head_dim)
    vocab = c.int("vocab_size", default=0)
    window, swa_layers = _sliding(c, arch, n_layer)
    n_expert = c.int("num_local_experts", "num_experts", "n_routed_experts", default=0)
    n_used = c.int("num_experts_per_tok", "moe_topk", default=0) if n_expert else 0
    ff, mlp_params = _mlp(c, n_layer, n_embd, n_expert, n_used)
    per_weight, label = _bytes_per_weight(c, fmt)
    tie = c.get("tie_word_embeddings")
    tied = bool(tie) if tie is not None else arch in _TIED_BY_DEFAULT
    embedding = int(vocab * n_embd * per_weight)
    output = 0 if tied else embedding
    # Never more than half the weights: a config that overstates the table cannot leave
    # the layers with nothing.
    other = min(embedding + output, weight_bytes // 2)
    if embedding + output > other:
        embedding, output = other * embedding // (embedding + output), other - embedding
    per_layer, extra = divmod(weight_bytes - other, n_layer)
    layer_bytes = (per_layer,) * (n_layer - 1) + (per_layer + extra,)
    attention = _attention_params(c, n_embd, n_head, n_head_kv, head_dim, kv_lora, rope_dim)
    params = n_layer * attention + mlp_params + vocab * n_embd * (1 if tied else 2)
    return ModelShape(
        format=fmt,
        architecture=arch,
        n_layer=n_layer,
        n_embd=n_embd,
        n_head=n_head,
        n_head_kv=1 if kv_lora else n_head_kv,
        key_length=key_length,
        value_length=value_length,
        context_length=c.int("max_position_embeddings", "max_sequence_length", default=0),
        layer_bytes=layer_bytes,
        other_bytes=other,
        vocab_size=vocab,
        parameter_count=params,
        quantization=quantization or label,
        sliding_window=window,
        swa_layers=swa_layers,
        kv_lora_rank=kv_lora or None,
        rope_dim=(rope_dim or None) if kv_lora else None,
        n_expert=n_expert,
        n_expert_used=n_used,
        feed_forward_length=ff,
        embedding_bytes=embedding,
        output_bytes=embedding if tied else output,
    )


def _sliding(c: _Config, arch: str, n_layer: int) -> tuple[int | None, tuple[bool, ...]]:
    window = c.get("sliding_window")
    if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
        return None, ()
    if c.get("use_sliding_window") is False:
        return None, ()
    types = c.get("layer_types")
    if isinstance(types, list) and types:
        flags = [t == "sliding_attention" for t in types[:n_layer]]
        return window, tuple(flags + [False] * (n_layer - len(flags)))
    if arch == "gemma2":
        return window, tuple(i % 2 == 0 for i in range(n_layer))
    if arch in _SWA_PERIODS:
        period = c.int("sliding_window_pattern", default=_SWA_PERIODS[arch]) or 1
        return window, tuple((i + 1) % period != 0 for i in range(n_layer))
    if arch in _ALL_WINDOWED:
        return window, (True,) * n_layer
    # Others that name a window (phi3, qwen2 with it off) are counted as full attention:
    # too much cache is the safe mistake.
    return None, ()


def _mlp(c: _Config, n_layer: int, n_embd: int, n_expert: int, n_used: int) -> tuple[int, int]:
    """The widest feed-forward a token passes through, and the MLPs' parameters."""
    dense = c.int("intermediate_size", "ffn_dim", "n_inner", default=4 * n_embd)
    if not n_expert:
        return dense, n_layer * 3 * n_embd * dense
    expert = c.int("moe_intermediate_size", default=dense)
    shared = c.int("shared_expert_intermediate_size", default=0)
    shared += c.int("n_shared_experts", default=0) * expert
    moe_ff = n_used * expert + shared
    n_dense = c.int("first_k_dense_replace", default=0)
    mlp_only = c.get("mlp_only_layers")
    n_dense += len(mlp_only) if isinstance(mlp_only, list) else 0
    n_dense = min(n_dense, n_layer)
    moe = 3 * n_embd * (n_expert * expert + shared) + n_embd * n_expert
    params = (n_layer - n_dense) * moe + n_dense * 3 * n_embd * dense
    return max(moe_ff, dense if n_dense else 0), params


def _attention_params(
    c: _Config, n_embd: int, n_head: int, n_head_kv: int, head_dim: int, kv_lora: int, rope: int
) -> int:
    if not kv_lora:
        return 2 * n_embd * n_head * head_dim + 2 * n_embd * n_head_kv * head_dim
    nope, v = c.int("qk_nope_head_dim", default=0), c.int("v_head_dim", default=head_dim)
    q_lora = c.int("q_lora_rank", default=0)
    q = (
        n_embd * q_lora + q_lora * n_head * (nope + rope)
        if q_lora
        else n_embd * n_head * (nope + rope)
    )
    return q + n_embd * (kv_lora + rope) + kv_lora * n_head * (nope + v) + n_head * v * n_embd


def _bytes_per_weight(c: _Config, fmt: WeightFormat) -> tuple[float, str | None]:
    """Bytes one embedding weight takes, and the quantization's name."""
    quant = c.get("quantization")
    if fmt == WeightFormat.MLX and isinstance(quant, Mapping):
        bits, group = quant.get("bits"), quant.get("group_size")
        if isinstance(bits, int) and isinstance(group, int) and bits > 0 and group > 0:
            return bits / 8 + 4 / group, f"{bits}bit"
    dtype = str(c.get("torch_dtype", "dtype") or "bfloat16")
    size = _DTYPE_BYTES.get(dtype, 2.0)
    qc = c.get("quantization_config")
    if isinstance(qc, Mapping):
        method = str(qc.get("quant_method") or "quantized").upper()
        bits = qc.get("bits")
        return size, f"{method}-{bits}bit" if isinstance(bits, int) else method
    return size, _DTYPE_NAMES.get(dtype)
