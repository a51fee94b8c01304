"""Ollama: `ollama serve`, configured through its environment."""

from __future__ import annotations

from roundhouse.api.engines import (
    DetectedEngine,
    EngineSpec,
    FlashAttention,
    LaunchParams,
    LaunchPlan,
    ModelFormat,
)
from roundhouse.core.engines.common import (
    Extras,
    check_params,
    command,
    host_port,
    one_kv_type,
    plan,
)

_SERVER_ONLY = "This is a vLLM or SGLang setting."
HINTS = {
    "n_gpu_layers": "Ollama picks GPU layers per model (num_gpu in a request or Modelfile).",
    "threads": "Ollama sets threads per model (num_thread in a request or Modelfile).",
    "served_name": "Ollama serves models by tag: copy the model to a new tag (ollama cp).",
    "extra_args": "`ollama serve` takes its settings from the environment, not arguments.",
    "tensor_parallel": _SERVER_ONLY,
    "pipeline_parallel": _SERVER_ONLY,
    "gpu_memory_utilization": _SERVER_ONLY,
    "max_model_len": "Set the context size (ctx_size) instead.",
    "dtype": "Ollama models carry their own quantization: pull another tag instead.",
    "draft_model": "Ollama has no speculative decoding.",
    "num_draft_tokens": "Ollama has no speculative decoding.",
    "tool_parser": "Ollama reads tool calls with each model's own template.",
    "reasoning_parser": "Ollama separates thinking itself (`think` in a request).",
}
WHY_NOT = {
    ModelFormat.SAFETENSORS: "Import it first with `ollama create`, or use vLLM or MLX.",
    ModelFormat.MLX: "MLX weights run in the MLX engine.",
}
_FLASH = {FlashAttention.ON: "1", FlashAttention.OFF: "0"}


def build(
    spec: EngineSpec, detected: DetectedEngine, params: LaunchParams, extras: Extras
) -> LaunchPlan:
    check_params(spec, params, accepts=set(spec.options), hints=HINTS, why_not=WHY_NOT)
    kv_type = one_kv_type(spec, params, "OLLAMA_KV_CACHE_TYPE")
    # OLLAMA_HOST also decides the bind address: set it, or a user's 0.0.0.0 would leak in.
    env = {"OLLAMA_HOST": host_port(params.host, params.port)}
    # Ollama takes no key (ADR 21): its own checks refuse foreign Host names and browser
    # origins beyond its built-in local list. An inherited OLLAMA_ORIGINS (say "*") would
    # open it to every web page, so it is set empty: Ollama's defaults alone.
    env["OLLAMA_ORIGINS"] = ""
    # "auto" sets nothing: Ollama then decides per model.
    flash = _FLASH.get(params.flash_attn) if params.flash_attn else None
    if flash:
        env["OLLAMA_FLASH_ATTENTION"] = flash
    if kv_type:
        env["OLLAMA_KV_CACHE_TYPE"] = kv_type
    if params.ctx_size:
        env["OLLAMA_CONTEXT_LENGTH"] = str(params.ctx_size)
    if params.parallel is not None:
        env["OLLAMA_NUM_PARALLEL"] = str(params.parallel)
    if params.max_loaded_models is not None:
        env["OLLAMA_MAX_LOADED_MODELS"] = str(params.max_loaded_models)
    return plan(
        spec,
        params,
        [*command(spec, detected), "serve"],
        env,
        # Ollama loads models on request; `model`, when given, is the tag to preload.
        expected_model_id=listed_tag(params.model) if params.model else None,
        metrics=False,
    )


def listed_tag(model: str) -> str:
    """The name Ollama lists a model under: a name without a tag is `<name>:latest`."""
    name = model.rsplit("/", 1)[-1]
    return model if ":" in name else f"{model}:latest"
