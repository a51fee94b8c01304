"""Where models live: the Hugging Face hub cache, or the folder the settings name instead."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub.constants import HF_HUB_CACHE


def hub_cache_dir(models_dir: str | None) -> Path:
    """`settings.models_dir` when set, else huggingface_hub's (HF_HUB_CACHE, HF_HOME), so
    what Roundhouse downloads is what vLLM, mlx-lm and `llama-server -hf` find."""
    if models_dir and models_dir.strip():
        return Path(models_dir.strip()).expanduser()
    return Path(HF_HUB_CACHE)
