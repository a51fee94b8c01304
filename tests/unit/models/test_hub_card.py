"""A model card's summary: the first prose after the YAML header, as plain bounded text."""

from __future__ import annotations

from roundhouse.core.models.hub.card import card_summary, strip_front_matter

QWEN_LIKE = """---
license: apache-2.0
pipeline_tag: text-generation
base_model:
- Qwen/Qwen3-8B
---

# Qwen3-8B-GGUF
<a href="https://chat.qwen.ai/" target="_blank" style="margin: 2px;">
    <img alt="Chat" src="https://img.shields.io/badge/chat-blue" style="display: inline-block;"/>
</a>

[![Discord](https://img.shields.io/discord/1.svg)](https://discord.gg/x) ![logo](logo.png)

## Qwen3 Highlights

Qwen3 is the **latest generation** of large language models in the [Qwen](https://qwenlm.github.io)
series, offering a comprehensive suite of dense and mixture-of-experts (MoE) models.

- **Uniquely support** seamless switching between thinking mode &amp; non-thinking mode.
- Significant `reasoning` gains.

```bash
llama-server -hf Qwen/Qwen3-8B-GGUF:Q8_0
```

| Model | Size |
|---|---|
| Q8_0 | 8.7 GB |
"""


def test_summary_skips_front_matter_badges_headings_code_and_tables() -> None:
    summary = card_summary(QWEN_LIKE)
    assert summary.startswith("Qwen3 is the latest generation of large language models in the Qwen")
    assert "the Qwen series, offering" in summary
    assert "• Uniquely support seamless switching between thinking mode & non-thinking mode." in (
        summary
    )
    assert "reasoning gains" in summary
    for absent in ("license", "---", "#", "img", "shields", "llama-server", "|", "**", "`"):
        assert absent not in summary, absent


def test_summary_is_bounded_on_a_word_with_an_ellipsis() -> None:
    text = "---\nlicense: mit\n---\n" + "word " * 2000
    summary = card_summary(text, limit=100)
    assert len(summary) <= 100
    assert summary.endswith("word…")


def test_summary_of_non_ascii_cards_and_edge_cases() -> None:
    assert card_summary("# 模型\n\n这是一个很小的模型。\n") == "这是一个很小的模型。"
    assert card_summary("Модель для тестов.") == "Модель для тестов."
    assert card_summary("") == ""
    assert card_summary("---\nonly: yaml\n---\n") == ""
    # An unterminated code fence swallows the rest rather than leaking code.
    assert card_summary("Intro.\n\n```\nrm -rf /\n") == "Intro."
    assert card_summary("<!-- hidden -->\n<div>Shown in words.</div>") == "Shown in words."


def test_front_matter_only_at_the_start() -> None:
    assert strip_front_matter("---\na: 1\n---\nBody") == "Body"
    assert strip_front_matter("Body\n---\na: 1\n---\n") == "Body\n---\na: 1\n---\n"
    assert strip_front_matter("\ufeff---\r\na: 1\r\n---\r\nBody") == "Body"
