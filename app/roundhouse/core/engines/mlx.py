"""MLX `mlx_lm.server`: its argv and environment."""

from __future__ import annotations

import os

from roundhouse.api.engines import DetectedEngine, EngineSpec, LaunchParams, LaunchPlan, ModelFormat
from roundhouse.core.engines.common import (
    GUARD_KEY_ENV,
    Extras,
    check_params,
    command,
    hub_env,
    is_local_path,
    opt,
    plan,
    python_guard_env,
    refuse,
    require_model,
)

_NO_SUCH = "mlx_lm.server has no such setting."
_SERVER_ONLY = "This is a vLLM or SGLang setting."
HINTS = {
    "ctx_size": "mlx_lm.server uses the model's own context length.",
    "max_model_len": "mlx_lm.server uses the model's own context length.",
    "n_gpu_layers": "MLX keeps the whole model in unified memory.",
    "threads": "MLX runs on the GPU (or its own CPU backend); there are no threads to set.",
    "flash_attn": _NO_SUCH,
    "cache_type_k": _NO_SUCH,
    "cache_type_v": _NO_SUCH,
    "served_name": "mlx_lm.server serves a model under its folder or repository name.",
    "tensor_parallel": _SERVER_ONLY,
    "pipeline_parallel": _SERVER_ONLY,
    "gpu_memory_utilization": _SERVER_ONLY,
    "dtype": "MLX models carry their own precision: choose another conversion instead.",
    "max_loaded_models": "mlx_lm.server serves one model: start another instance for another.",
    # mlx-lm picks both itself: the tool parser from the chat template (or tokenizer_config's
    # tool_parser_type), thinking from <think> tokens in the vocabulary.
    "tool_parser": "mlx_lm.server picks its tool parser from the model's chat template.",
    "reasoning_parser": "mlx_lm.server finds a model's thinking tokens itself.",
    "n_cpu_moe": "MLX keeps the whole model in unified memory.",
    "draft_min": "mlx_lm.server drafts a fixed number of tokens: set the draft tokens.",
    "draft_gpu_layers": "MLX keeps the draft model in unified memory too.",
    "lora": "Pass mlx_lm.server an adapter folder in the extra arguments (--adapter-path).",
}
WHY_NOT = {
    ModelFormat.GGUF: "Run GGUF files with llama.cpp or Ollama.",
    ModelFormat.OLLAMA: "Ollama tags run in Ollama.",
}
OWNED = (
    "--model", "--host", "--port", "--draft-model", "--num-draft-tokens",
    "--decode-concurrency",
)  # fmt: skip


def build(
    spec: EngineSpec, detected: DetectedEngine, params: LaunchParams, extras: Extras
) -> LaunchPlan:
    model = require_model(spec, params)
    check_params(spec, params, accepts=set(spec.options), hints=HINTS, why_not=WHY_NOT, owned=OWNED)
    if params.num_draft_tokens is not None and not params.draft_model:
        refuse("A number of draft tokens needs a draft model: choose one, or clear the number.")
    argv = [*command(spec, detected), "--model", model]
    argv += ["--host", params.host, "--port", str(params.port)]
    opt(argv, "--draft-model", params.draft_model)
    opt(argv, "--num-draft-tokens", params.num_draft_tokens)
    opt(argv, "--decode-concurrency", params.parallel)
    argv += params.extra_args
    models = [model, *([params.draft_model] if params.draft_model else [])]
    # mlx_lm.server has no key of its own: the guard stands in front of its handler.
    guard = python_guard_env(extras)
    return plan(
        spec,
        params,
        argv,
        {**hub_env(models, extras), **guard},
        expected_model_id=listed_model_id(model),
        metrics=False,
        secret_env=(GUARD_KEY_ENV,) if guard else (),
    )


def listed_model_id(model: str) -> str | None:
    """The id GET /v1/models will list for `model`, when it surely lists one.

    A local folder is listed as `Path(model).resolve()`: absolute, links followed (macOS's
    /tmp is /private/tmp), no trailing slash. A Hub repo id is listed only when its cached
    "main" snapshot holds config.json, model.safetensors.index.json and
    tokenizer_config.json: single-file repos (most non-MLX ones) and other revisions are
    not, so no id is expected and the identity check rests on the port's owner.
    """
    if is_local_path(model):
        return os.path.realpath(model)
    return None
