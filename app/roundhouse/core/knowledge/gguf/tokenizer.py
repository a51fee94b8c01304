"""Whether two GGUF models share a tokenizer, as a draft model for speculative decoding must."""

from __future__ import annotations

from roundhouse.core.knowledge.gguf.header import GgufHeader
from roundhouse.core.knowledge.gguf.summary import vocab_size

# llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE: a draft's vocabulary may differ by this much.
VOCAB_SLACK = 128


def tokenizer_mismatch(model: GgufHeader, draft: GgufHeader) -> str | None:
    """Why `draft` cannot draft for `model`, in words; None when their tokenizers agree
    (the same tokenizer model and pre-tokenizer, vocabularies within 128 tokens)."""
    for key, words in (
        ("tokenizer.ggml.model", "tokenizer"),
        ("tokenizer.ggml.pre", "pre-tokenizer"),
    ):
        a, b = model.str_value(key), draft.str_value(key)
        if a and b and a != b:
            return f"the draft's {words} is {b}, the model's {a}"
    size_a, size_b = vocab_size(model) or 0, vocab_size(draft) or 0
    if size_a and size_b and abs(size_a - size_b) > VOCAB_SLACK:
        return f"the draft knows {size_b:,} tokens, the model {size_a:,}"
    return None
