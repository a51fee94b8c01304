"""SGLang: `python -m sglang.launch_server` in a chosen Python."""

from __future__ import annotations

from roundhouse.api.engines import DetectedEngine, EngineSpec, LaunchParams, LaunchPlan, ModelFormat
from roundhouse.core.engines.capabilities import (
    HINT_SGLANG_THINKING,
    HINTS_SERVERS,
    draft_and_adapters,
    sglang_args,
)
from roundhouse.core.engines.common import (
    GUARD_KEY_ENV,
    MEDIA_DOMAINS_FLAG,
    Extras,
    check_params,
    command,
    hub_env,
    media_domains_args,
    one_kv_type,
    one_length,
    opt,
    plan,
    python_guard_env,
    require_model,
)
from roundhouse.core.engines.extra_args import TRUST_REMOTE_CODE
from roundhouse.core.engines.tool_parsers import parser_flags

HINTS = {
    "reranking": (
        "SGLang serves /v1/rerank for a reranker model started as one: add --is-embedding "
        "in the extra arguments instead."
    ),
    "n_gpu_layers": (
        "SGLang keeps the whole model on the GPUs: lower the GPU memory fraction or the "
        "context length to fit, or use llama.cpp to split between CPU and GPU."
    ),
    "threads": "SGLang runs on GPUs; there are no threads to set.",
    "flash_attn": "SGLang picks its attention backend itself.",
    "pipeline_parallel": "Roundhouse starts SGLang with tensor parallelism; use vLLM for both.",
    "max_loaded_models": "SGLang serves one model: start another instance for another.",
    "thinking": HINT_SGLANG_THINKING,
    **HINTS_SERVERS,
}
WHY_NOT = {
    ModelFormat.GGUF: "Run GGUF files with llama.cpp or Ollama, or choose the safetensors repo.",
    ModelFormat.MLX: "MLX weights run in the MLX engine on a Mac.",
    ModelFormat.OLLAMA: "Ollama tags run in Ollama.",
}
OWNED = (
    "--model-path", "--model", "--host", "--port", "--tp", "--tp-size",
    "--mem-fraction-static", "--context-length", "--dtype", "--kv-cache-dtype",
    "--max-running-requests", "--enable-metrics", "--served-model-name", MEDIA_DOMAINS_FLAG,
)  # fmt: skip
# SGLang's --allowed-media-domains (which also checks where a download is redirected) is in
# 0.5.20; older releases have no such option.
MEDIA_DOMAINS_SINCE = "0.5.20"


def build(
    spec: EngineSpec, detected: DetectedEngine, params: LaunchParams, extras: Extras
) -> LaunchPlan:
    model = require_model(spec, params)
    check_params(spec, params, accepts=set(spec.options), hints=HINTS, why_not=WHY_NOT, owned=OWNED)
    length = one_length(spec, params)
    kv_type = one_kv_type(spec, params, "--kv-cache-dtype")
    argv = [*command(spec, detected), "--model-path", model]
    argv += ["--host", params.host, "--port", str(params.port)]
    opt(argv, "--tp", params.tensor_parallel)
    # SGLang's fraction covers weights and KV cache, like vLLM's gpu-memory-utilization.
    opt(argv, "--mem-fraction-static", params.gpu_memory_utilization)
    opt(argv, "--context-length", length)
    opt(argv, "--dtype", params.dtype)
    opt(argv, "--kv-cache-dtype", kv_type)
    opt(argv, "--max-running-requests", params.parallel)
    if params.metrics:
        argv.append(spec.metrics_flag or "--enable-metrics")
    opt(argv, "--served-model-name", params.served_name)
    if params.trust_remote_code:
        argv.append(TRUST_REMOTE_CODE)
    argv += media_domains_args(detected, MEDIA_DOMAINS_SINCE, extras)
    # Without parsers SGLang leaves tool calls and thoughts as plain text in the content.
    parsers, notes = parser_flags(spec, params, model, extras.hf_hub_cache)
    argv += parsers
    argv += sglang_args(params)
    argv += params.extra_args
    # SGLang reads its own --api-key only from argv, where every user can read it, and
    # leaves some routes open: the guard stands in front of its whole application instead.
    guard = python_guard_env(extras)
    return plan(
        spec,
        params,
        argv,
        {**hub_env([model, *draft_and_adapters(params)], extras), **guard},
        expected_model_id=params.served_name or model,
        metrics=params.metrics,
        secret_env=(GUARD_KEY_ENV,) if guard else (),
        notes=notes,
    )
