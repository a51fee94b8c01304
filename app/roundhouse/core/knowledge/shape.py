"""A model's shape as memory estimation needs it, from a GGUF header or an HF config."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class WeightFormat(StrEnum):
    GGUF = "gguf"
    SAFETENSORS = "safetensors"
    MLX = "mlx"


@dataclass(frozen=True)
class ModelShape:
    """The numbers that decide how much memory a model takes; sizes in bytes.

    `layer_bytes[i]` is what the weights of block i take; `other_bytes` the rest (token
    embeddings, output head, norms outside blocks). Their sum is the weights' size.
    """

    format: WeightFormat
    architecture: str
    n_layer: int
    n_embd: int
    n_head: int
    n_head_kv: int
    key_length: int  # per head
    value_length: int  # per head
    context_length: int  # the context the model was trained for
    layer_bytes: tuple[int, ...]
    other_bytes: int
    vocab_size: int = 0
    parameter_count: int = 0
    quantization: str | None = None  # "Q4_K_M", "BF16", "4bit", ...
    # Sliding-window attention: the window, and which layers use it (True = windowed).
    sliding_window: int | None = None
    swa_layers: tuple[bool, ...] = ()
    # Multi-head latent attention (DeepSeek-style) caches one compressed vector per token.
    kv_lora_rank: int | None = None
    rope_dim: int | None = None
    n_expert: int = 0
    n_expert_used: int = 0
    # KV heads per layer where a model varies them (0 = a layer without a KV cache, as in
    # hybrid recurrent models); empty when every layer has n_head_kv.
    n_head_kv_layers: tuple[int, ...] = ()
    # The widest feed-forward a token passes through: n_ff for a dense model; for a
    # mixture of experts, experts used x expert width + shared experts' width (the larger
    # of that and a leading dense block's). 0 = unknown (the fit then assumes 4 x n_embd).
    feed_forward_length: int = 0
    # Parts of other_bytes the fit places apart: the token embeddings (llama.cpp keeps them
    # in RAM) and the output head (placed with the last layer). With tied embeddings the
    # head is the embedding table, which llama.cpp loads a second time for the GPU, so
    # output_bytes need not be part of other_bytes. 0 and 0 = unknown (half and half).
    embedding_bytes: int = 0
    output_bytes: int = 0
    # The part of each block's bytes that is its experts' feed-forward (ffn_*_exps), what
    # llama.cpp's --n-cpu-moe keeps in RAM; empty for a dense model or an unknown split.
    expert_bytes: tuple[int, ...] = ()

    @property
    def weight_bytes(self) -> int:
        return sum(self.layer_bytes) + self.other_bytes
