"""The Capabilities group's sentences: when to use each control, shown beneath it (ADR 48)."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

# When to use each, in the user's words (shown under the control).
WHEN = {
    "n_cpu_moe": (
        "For a mixture-of-experts model (Qwen3-30B-A3B, gpt-oss, Mixtral) too big for the "
        "GPU: its experts stay in RAM and everything else on the GPU, much faster than "
        "leaving whole layers on the CPU."
    ),
    "draft_model": (
        "Speculative decoding: a small model of the same family (the same tokenizer) "
        "guesses a few tokens that the model checks at once. Faster replies for code and "
        "plain text; it costs the draft's memory."
    ),
    "num_draft_tokens": "The most tokens drafted at a time: 4 to 16 with llama.cpp, 3 to 5 "
    "with vLLM and SGLang.",
    "draft_min": "Drafts shorter than this are not used; 0 or 1 suits most models.",
    "draft_gpu_layers": "Where the draft runs; leave it to the engine unless the GPU is full.",
    "thinking": (
        "Off: a reasoning model answers at once, shorter and faster. On: it thinks first, "
        "for harder questions."
    ),
    "reasoning_budget": "Stops the thinking after this many tokens: a cap on the wait.",
    "reasoning_effort": "How hard a model that takes an effort (gpt-oss) thinks.",
    "lora": (
        "Adapters trained for this base model change its style or teach it a task. Files "
        "separated by ';', each with an optional @scale (file.gguf@0.5)."
    ),
    "flash_attn": "On saves memory and time where the GPU has it; needed for a quantized V cache.",
    "cache_type_k": "q8_0 halves the cache's memory at almost no loss: use it for long contexts.",
    "cache_type_v": "The same for values; a quantized V needs flash attention on.",
}


def with_hint(widget: QWidget, name: str) -> QWidget:
    """`widget` with the sentence that says when to use it beneath."""
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(2)
    layout.addWidget(widget)
    hint = QLabel(WHEN[name])
    hint.setObjectName("hint")
    hint.setWordWrap(True)
    layout.addWidget(hint)
    return box
