"""llama.cpp `llama-server`: its argv and environment."""

from __future__ import annotations

from roundhouse.api.engines import DetectedEngine, EngineSpec, LaunchParams, LaunchPlan, ModelFormat
from roundhouse.core.engines.capabilities import llama_cpp_args
from roundhouse.core.engines.common import (
    Extras,
    check_params,
    command,
    opt,
    plan,
    require_model,
)
from roundhouse.core.engines.projector import projector_args
from roundhouse.core.engines.rpc import rpc_args
from roundhouse.core.engines.tool_parsers import check_not_twice
from roundhouse.core.errors import InvalidInputError

_SPLIT = (
    "llama.cpp splits a model across GPUs by layers on its own; "
    "choose vLLM or SGLang for tensor or pipeline parallelism."
)
HINTS = {
    "tensor_parallel": _SPLIT,
    "pipeline_parallel": _SPLIT,
    "gpu_memory_utilization": "llama.cpp's memory follows the context size and GPU layers.",
    "max_model_len": "Set the context size (ctx_size) instead.",
    "dtype": "A GGUF file carries its own quantization: choose another file instead.",
    "max_loaded_models": "llama-server serves one model: start another instance for another.",
    "tool_parser": (
        "llama-server reads tool calls with the model's own Jinja chat template (--jinja): "
        "there is no parser to choose."
    ),
}
# --reasoning-format's values: none leaves thoughts in the content, deepseek puts them in
# reasoning_content, deepseek-legacy does both, auto (newer builds' default) is deepseek.
REASONING_FORMATS = ("none", "deepseek", "deepseek-legacy", "auto")
REASONING_FLAG = "--reasoning-format"
TOOLS_NOTE = (
    "Tool calls: llama-server renders tools and reads calls with the model's Jinja chat "
    "template (--jinja). Reasoning: {reasoning}."
)
WHY_NOT = {
    ModelFormat.SAFETENSORS: "It loads GGUF files: pick a GGUF build of this model.",
    ModelFormat.MLX: "MLX weights run in the MLX engine; pick a GGUF build for llama.cpp.",
    ModelFormat.OLLAMA: "Ollama tags run in Ollama; start Ollama instead.",
}
OWNED = (
    "-m", "--model", "--host", "--port", "-c", "--ctx-size", "-ngl", "--n-gpu-layers",
    "--gpu-layers", "-t", "--threads", "-np", "--parallel", "-fa", "--flash-attn",
    "-ctk", "--cache-type-k", "-ctv", "--cache-type-v", "--metrics", "-a", "--alias",
    "--jinja", "--no-jinja", "--rerank", "--reranking", "--rpc", "-ts", "--tensor-split",
)  # fmt: skip
# --api-key's environment twin (llama.cpp's common/arg.cpp); not LLAMA_ARG_API_KEY.
API_KEY_ENV = "LLAMA_API_KEY"
# With a key set, llama-server refuses every route but /health and its web UI's files; its
# CORS default answers every origin, with credentials, and its "localhost" mode still lets
# pages served from localhost in. Any other value is sent as it is, so an origin no page
# can have (.invalid never resolves) lets none in. The web UI, never used, is off (ADR 21).
NO_PAGE_ORIGIN = "https://engine.roundhouse.invalid"
GUARD_ENV = {"LLAMA_ARG_CORS_ORIGINS": NO_PAGE_ORIGIN, "LLAMA_ARG_UI": "0"}


def _is_verbosity(arg: str) -> bool:
    """An extra argument that sets the log level itself (it wins over the memory report)."""
    return arg.split("=", 1)[0] in ("-lv", "--verbosity", "--log-verbosity", "-v", "--verbose")


def build(
    spec: EngineSpec, detected: DetectedEngine, params: LaunchParams, extras: Extras
) -> LaunchPlan:
    model = require_model(spec, params)
    check_params(spec, params, accepts=set(spec.options), hints=HINTS, why_not=WHY_NOT, owned=OWNED)
    argv = [*command(spec, detected), "-m", model]
    argv += ["--host", params.host, "--port", str(params.port)]
    opt(argv, "-c", params.ctx_size)
    opt(argv, "-ngl", params.n_gpu_layers)
    opt(argv, "-t", params.threads)
    opt(argv, "-np", params.parallel)
    opt(argv, "-fa", params.flash_attn)
    opt(argv, "-ctk", params.cache_type_k)
    opt(argv, "-ctv", params.cache_type_v)
    if params.metrics:
        argv.append(spec.metrics_flag or "--metrics")
    opt(argv, "-a", params.served_name)
    if params.jinja:
        # Tools need the Jinja template: current builds default to it, older ones do not.
        argv.append("--jinja")
    if params.reranking:
        argv.append("--reranking")
    # The RPC workers hold their share of the layers; llama.cpp lists them before the GPUs.
    argv += rpc_args(params.rpc, params.tensor_split, across=bool(params.across))
    # A --reasoning-format in the extra arguments is the user's, and then the only one.
    check_not_twice(
        spec.title,
        "reasoning_parser",
        params.reasoning_parser,
        REASONING_FLAG,
        params.extra_args,
        prefixes=False,
    )
    reasoning = _reasoning_format(params.reasoning_parser)
    opt(argv, REASONING_FLAG, reasoning)
    # The vision projector: the one chosen, else the mmproj beside the model (ADR 45).
    argv += projector_args(model, params.mmproj, params.extra_args)
    argv += llama_cpp_args(params)
    if params.memory_report and not any(_is_verbosity(a) for a in params.extra_args):
        # Current builds log their buffer sizes at info level, 4 (their default is 3).
        argv += ["-lv", "4"]
    argv += params.extra_args
    # Every llama-server flag has an environment twin: the key goes there, not on argv.
    env = {API_KEY_ENV: extras.api_key, **GUARD_ENV} if extras.api_key else {}
    return plan(
        spec,
        params,
        argv,
        env,
        # /v1/models lists the alias, else the path exactly as given with -m.
        expected_model_id=params.served_name or model,
        metrics=params.metrics,
        secret_env=(API_KEY_ENV,) if extras.api_key else (),
        notes=(TOOLS_NOTE.format(reasoning=_reasoning_words(reasoning)),),
    )


def _reasoning_format(choice: str | None) -> str | None:
    """The --reasoning-format for the user's reasoning_parser; None: the build's default
    (deepseek, or auto, which is deepseek: thoughts arrive as reasoning_content)."""
    if choice is None:
        return None
    if choice not in REASONING_FORMATS:
        raise InvalidInputError(
            f"llama.cpp takes {', '.join(REASONING_FORMATS)} as its reasoning format, not "
            f"{choice!r}: none leaves the model's thoughts in the content, deepseek puts them "
            "in reasoning_content."
        )
    return choice


def _reasoning_words(reasoning: str | None) -> str:
    if reasoning is None:
        return "the build's default --reasoning-format, thoughts in reasoning_content"
    return f"--reasoning-format {reasoning} (set in the instance's options)"
