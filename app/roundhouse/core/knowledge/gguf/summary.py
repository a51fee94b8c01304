"""The facts a user and the library want from a GGUF header, in one frozen record."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from roundhouse.core.knowledge.gguf.constants import Keys, LlamaFileType
from roundhouse.core.knowledge.gguf.header import GgufHeader

TOKENS = "tokenizer.ggml.tokens"
_FILE_TYPES = {t.value: t for t in LlamaFileType}


@dataclass(frozen=True)
class GgufSummary:
    """What the model is; None where the header does not say. Sizes in bytes."""

    architecture: str
    name: str | None
    size_label: str | None  # "8B", "8x7B", as the converter wrote it
    parameter_count: int  # the elements of every tensor
    quantization: str | None  # "Q4_K_M" from general.file_type, else the main tensor type
    context_length: int | None
    block_count: int | None
    embedding_length: int | None
    feed_forward_length: int | None
    head_count: int | None  # the largest, where it varies by layer
    head_count_kv: int | None
    key_length: int | None  # per head
    value_length: int | None
    vocab_size: int | None
    sliding_window: int | None
    expert_count: int
    expert_used_count: int
    tensor_count: int
    tensor_bytes: int
    file_size: int

    @property
    def weight_bytes(self) -> int:
        return self.tensor_bytes


def summarize(header: GgufHeader) -> GgufSummary:
    arch = header.architecture or "unknown"
    head_count = layer_max(header, "attention.head_count")
    head_count_kv = layer_max(header, "attention.head_count_kv") or head_count
    embedding = header.int_value(header.arch_key("embedding_length"))
    head_dim = embedding // head_count if embedding and head_count else None
    return GgufSummary(
        architecture=arch,
        name=header.str_value(Keys.General.NAME),
        size_label=header.str_value(Keys.General.SIZE_LABEL),
        parameter_count=sum(t.n_elements for t in header.tensors),
        quantization=quantization(header),
        context_length=header.int_value(header.arch_key("context_length")),
        block_count=header.int_value(header.arch_key("block_count")),
        embedding_length=embedding,
        feed_forward_length=layer_max(header, "feed_forward_length"),
        head_count=head_count,
        head_count_kv=head_count_kv,
        key_length=header.int_value(header.arch_key("attention.key_length")) or head_dim,
        value_length=header.int_value(header.arch_key("attention.value_length")) or head_dim,
        vocab_size=vocab_size(header),
        sliding_window=header.int_value(header.arch_key("attention.sliding_window")) or None,
        expert_count=header.int_value(header.arch_key("expert_count")) or 0,
        expert_used_count=header.int_value(header.arch_key("expert_used_count")) or 0,
        tensor_count=len(header.tensors),
        tensor_bytes=header.tensor_bytes,
        file_size=header.file_size,
    )


def layer_max(header: GgufHeader, suffix: str) -> int | None:
    """`<arch>.<suffix>` as one number, or the largest where it is given per layer."""
    key = header.arch_key(suffix)
    value = header.int_value(key)
    if value is not None:
        return value
    per_layer = header.int_list(key)
    return max(per_layer) if per_layer else None


def quantization(header: GgufHeader) -> str | None:
    """The file type's name ("Q4_K_M", "BF16"), else the type holding most weight bytes."""
    named = file_type_name(header.int_value(Keys.General.FILE_TYPE))
    if named is not None:
        return named
    weights: Counter[str] = Counter()
    for tensor in header.tensors:
        if len(tensor.shape) >= 2:  # norms and biases stay F32 in every quantization
            weights[tensor.type.name] += tensor.n_bytes
    return weights.most_common(1)[0][0] if weights else None


def file_type_name(code: int | None) -> str | None:
    """general.file_type in words ("Q4_K_M"); None when absent, unknown or "guessed"."""
    file_type = _FILE_TYPES.get(code) if code is not None else None
    if file_type is None or file_type == LlamaFileType.GUESSED:
        return None
    return file_type.name.removeprefix("MOSTLY_").removeprefix("ALL_")


def vocab_size(header: GgufHeader) -> int | None:
    found = header.int_value(header.arch_key("vocab_size")) or header.array_length(TOKENS)
    if found:
        return found
    for tensor in header.tensors:
        if tensor.name == "token_embd.weight" and len(tensor.shape) == 2:
            return tensor.shape[1]
    return None
