"""vLLM: `vllm serve` (or its OpenAI server module in a chosen Python)."""

from __future__ import annotations

from roundhouse.api.engines import DetectedEngine, EngineSpec, LaunchParams, LaunchPlan, ModelFormat
from roundhouse.core.engines.capabilities import (
    HINTS_SERVERS,
    draft_and_adapters,
    vllm_args,
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
from roundhouse.core.engines.tool_parsers import REASONING_FLAG, parser_flags
from roundhouse.core.engines.versions import version_key

HINTS = {
    "reranking": (
        "vLLM serves /v1/rerank and /v1/score for a reranker (cross-encoder) model on its "
        "own: start the model without this option."
    ),
    "n_gpu_layers": (
        "vLLM keeps the whole model on the GPUs: lower the GPU memory fraction or the "
        "maximum model length to fit, or use llama.cpp to split between CPU and GPU."
    ),
    "threads": "vLLM runs on GPUs; there are no threads to set.",
    "flash_attn": "vLLM picks its attention backend itself.",
    "max_loaded_models": "vLLM serves one model: start another instance for another.",
    **HINTS_SERVERS,
}
WHY_NOT = {
    ModelFormat.GGUF: (
        "vLLM's GGUF support is experimental and takes single files only: run GGUF files with "
        "llama.cpp or Ollama, or choose the model's safetensors repository for vLLM."
    ),
    ModelFormat.MLX: "MLX weights run in the MLX engine on a Mac.",
    ModelFormat.OLLAMA: "Ollama tags run in Ollama.",
}
OWNED = (
    "--model", "--host", "--port", "--served-model-name", "-tp", "--tensor-parallel-size",
    "-pp", "--pipeline-parallel-size", "--gpu-memory-utilization", "--max-model-len",
    "--dtype", "--kv-cache-dtype", "--max-num-seqs", MEDIA_DOMAINS_FLAG,
)  # fmt: skip
API_KEY_ENV = "VLLM_API_KEY"
ENABLE_REASONING = "--enable-reasoning"
# --allowed-media-domains came with vLLM 0.11.0 (its fix for CVE-2025-6242).
MEDIA_DOMAINS_SINCE = "0.11.0"


def _for_version(parsers: list[str], version: str | None) -> list[str]:
    """vLLM 0.7.1-0.8.x read --reasoning-parser only beside --enable-reasoning, which 0.9
    deprecated and 0.10 removed (an unknown version is taken as current)."""
    if REASONING_FLAG in parsers and version and version_key(version) < version_key("0.9.0"):
        return [*parsers, ENABLE_REASONING]
    return parsers


def build(
    spec: EngineSpec, detected: DetectedEngine, params: LaunchParams, extras: Extras
) -> LaunchPlan:
    model = require_model(spec, params)
    check_params(spec, params, accepts=set(spec.options), hints=HINTS, why_not=WHY_NOT, owned=OWNED)
    length = one_length(spec, params)
    kv_type = one_kv_type(spec, params, "--kv-cache-dtype")
    if detected.path:
        argv = [detected.path, "serve", model]
    else:
        # The module form (python -m vllm.entrypoints.openai.api_server) takes --model.
        argv = [*command(spec, detected), "--model", model]
    argv += ["--host", params.host, "--port", str(params.port)]
    opt(argv, "--served-model-name", params.served_name)
    opt(argv, "-tp", params.tensor_parallel)
    opt(argv, "-pp", params.pipeline_parallel)
    opt(argv, "--gpu-memory-utilization", params.gpu_memory_utilization)
    opt(argv, "--max-model-len", length)
    opt(argv, "--dtype", params.dtype)
    opt(argv, "--kv-cache-dtype", kv_type)
    opt(argv, "--max-num-seqs", params.parallel)
    if params.trust_remote_code:
        argv.append(TRUST_REMOTE_CODE)
    media = media_domains_args(detected, MEDIA_DOMAINS_SINCE, extras)
    argv += media
    # Without a tool-call parser vLLM answers a request with `tools` 400.
    parsers, notes = parser_flags(spec, params, model, extras.hf_hub_cache)
    argv += _for_version(parsers, detected.version)
    argv += vllm_args(params)
    argv += params.extra_args
    env = hub_env([model, *draft_and_adapters(params)], extras)
    if media:
        # Else an allowed host could redirect vLLM anywhere: it checks the first URL only.
        env["VLLM_MEDIA_URL_ALLOW_REDIRECTS"] = "0"
    if extras.api_key:
        # vLLM's own key guards /v1 only (/metrics, /tokenize, /invocations stay open) and
        # its CORS allows every origin: the guard stands in front of the whole application.
        env[API_KEY_ENV] = extras.api_key
        env.update(python_guard_env(extras))
    return plan(
        spec,
        params,
        argv,
        env,
        expected_model_id=params.served_name or model,
        metrics=params.metrics,
        secret_env=(API_KEY_ENV, GUARD_KEY_ENV) if extras.api_key else (),
        notes=notes,
    )
