"""What keeps the start dialog's Start disabled, in words: checks of the form as typed."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from roundhouse.api.engines import EngineId, InstanceOptions

# One KV type for K and V: the engine has a single setting for both.
ONE_KV_TYPE = frozenset({EngineId.OLLAMA, EngineId.VLLM, EngineId.SGLANG})
MODEL_HINTS: dict[EngineId, str] = {
    EngineId.LLAMA_CPP: "a .gguf file",
    EngineId.OLLAMA: "optional: an Ollama tag to load first (it serves every pulled model)",
    EngineId.MLX: "a Hugging Face repo id (mlx-community/…) or an MLX model folder",
    EngineId.VLLM: "a Hugging Face repo id (org/name) or a model folder",
    EngineId.SGLANG: "a Hugging Face repo id (org/name) or a model folder",
}


def start_problems(
    engine: EngineId,
    engine_title: str,
    model: str,
    fields: frozenset[str],
    extra_args: str,
    options: InstanceOptions,
    daemon_is_local: bool,
) -> list[str]:
    """The problems of a start of `engine` (which takes `fields`) with `model` and `options`;
    a model path is looked for only when the daemon runs on this machine."""
    found: list[str] = []
    if not model and engine != EngineId.OLLAMA:
        found.append(f"Choose a model: {MODEL_HINTS.get(engine, 'a model')}.")
    elif engine == EngineId.LLAMA_CPP and not model.lower().endswith(".gguf"):
        found.append("llama.cpp loads GGUF files: choose a .gguf file.")
    local_path = model and daemon_is_local and _looks_like_path(model)
    if local_path and not Path(model).exists():
        found.append(f"There is no file or folder at {model}.")
    if "extra_args" in fields:
        try:
            shlex.split(extra_args, posix=os.name != "nt")
        except ValueError as exc:
            found.append(f"Extra arguments: {exc}.")
    k, v = options.cache_type_k, options.cache_type_v
    if engine in ONE_KV_TYPE and k and v and k != v:
        found.append(
            f"{engine_title} has one KV cache type for keys and values: "
            "choose the same type for K and V."
        )
    if options.ctx_size and options.max_model_len and options.ctx_size != options.max_model_len:
        found.append(
            "The context size and the maximum model length name the same limit here: "
            "set one of them."
        )
    if options.num_draft_tokens is not None and not options.draft_model:
        found.append("A number of draft tokens needs a draft model.")
    return found


def _looks_like_path(model: str) -> bool:
    return Path(model).is_absolute() or model.startswith(("~", "./", "../"))
