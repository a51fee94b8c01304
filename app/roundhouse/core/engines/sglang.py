"""SGLang: `python -m sglang.launch_server` in a chosen Python."""

from __future__ import annotations

from roundhouse.api.engines import DetectedEngine, EngineSpec, LaunchParams, LaunchPlan, ModelFormat
from roundhouse.core.engines.common import (
    Extras,
    check_params,
    command,
    hub_env,
    no_api_key,
    one_kv_type,
    one_length,
    opt,
    plan,
    require_model,
)

HINTS = {
    "n_gpu_layers": (
        "SGLang keeps the whole model on the GPUs: lower the GPU memory fraction or the "
        "context length to fit, or use llama.cpp to split between CPU and GPU."
    ),
    "threads": "SGLang runs on GPUs; there are no threads to set.",
    "flash_attn": "SGLang picks its attention backend itself.",
    "pipeline_parallel": "Roundhouse starts SGLang with tensor parallelism; use vLLM for both.",
    "draft_model": "Set SGLang's speculative decoding in the extra arguments.",
    "num_draft_tokens": "Set SGLang's speculative decoding in the extra arguments.",
    "max_loaded_models": "SGLang serves one model: start another instance for another.",
}
WHY_NOT = {
    ModelFormat.GGUF: "Run GGUF files with llama.cpp or Ollama, or choose the safetensors repo.",
    ModelFormat.MLX: "MLX weights run in the MLX engine on a Mac.",
    ModelFormat.OLLAMA: "Ollama tags run in Ollama.",
}
OWNED = (
    "--model-path", "--model", "--host", "--port", "--tp", "--tp-size",
    "--mem-fraction-static", "--context-length", "--dtype", "--kv-cache-dtype",
    "--max-running-requests", "--enable-metrics", "--served-model-name",
)  # fmt: skip


def build(
    spec: EngineSpec, detected: DetectedEngine, params: LaunchParams, extras: Extras
) -> LaunchPlan:
    model = require_model(spec, params)
    check_params(spec, params, accepts=set(spec.options), hints=HINTS, why_not=WHY_NOT, owned=OWNED)
    no_api_key(
        spec,
        extras,
        "SGLang reads it only from its command line, where every user of this machine can "
        "read it. It stays on loopback behind the gateway, which checks keys.",
    )
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
    argv += params.extra_args
    return plan(
        spec,
        params,
        argv,
        hub_env([model], extras),
        expected_model_id=params.served_name or model,
        metrics=params.metrics,
    )
