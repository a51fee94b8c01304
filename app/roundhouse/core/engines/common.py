"""What every engine's launch builder shares: checks in the user's words, URLs, the plan."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import NoReturn

from roundhouse.api.engines import (
    DetectedEngine,
    EngineSpec,
    LaunchParams,
    LaunchPlan,
    ModelFormat,
)
from roundhouse.base.resources import resource_path
from roundhouse.core.engines import extra_args
from roundhouse.core.engines.versions import version_key
from roundhouse.core.errors import InvalidInputError

LOOPBACK = ("127.0.0.1", "::1", "localhost")

# The choices a user makes, named as the UI names them; the adapters accept a subset.
CHOICES = {
    "ctx_size": "a context size",
    "n_gpu_layers": "a number of GPU layers",
    "threads": "a thread count",
    "parallel": "parallel slots",
    "flash_attn": "a flash attention setting",
    "cache_type_k": "a K cache type",
    "cache_type_v": "a V cache type",
    "served_name": "a served model name",
    "extra_args": "extra arguments",
    "tensor_parallel": "tensor parallelism",
    "pipeline_parallel": "pipeline parallelism",
    "gpu_memory_utilization": "a GPU memory fraction",
    "max_model_len": "a maximum model length",
    "dtype": "a dtype",
    "draft_model": "a draft model",
    "num_draft_tokens": "a number of draft tokens",
    "max_loaded_models": "a limit of loaded models",
    "memory_report": "a memory report",
    "reranking": "reranking",
    "trust_remote_code": "trusting remote code",
    "tool_parser": "a tool-call parser",
    "reasoning_parser": "a reasoning parser",
    "rpc": "RPC workers",
    "tensor_split": "a split across devices",
    "across": "a split across paired machines",
    "n_cpu_moe": "experts kept in RAM",
    "draft_min": "a least number of draft tokens",
    "draft_gpu_layers": "draft model GPU layers",
    "thinking": "reasoning turned on or off",
    "reasoning_budget": "a reasoning budget",
    "reasoning_effort": "a reasoning effort",
    "lora": "LoRA adapters",
}


@dataclass(frozen=True)
class Extras:
    """What the composition root adds to the user's choices."""

    # Only ever placed in the environment, never on argv (every user can read argv).
    api_key: str | None = None
    # An existing folder: mlx_lm.server answers /v1/models with nothing when it is missing.
    hf_hub_cache: str | None = None
    # The hosts engines may fetch media from (gateway.media_domains); none: inline only.
    media_domains: tuple[str, ...] = ()


# vLLM and SGLang read an empty media allowlist as "every host": with none allowed they get
# this name instead, which no real URL has (RFC 2606 reserves .invalid).
NO_MEDIA_HOST = "none.invalid"
MEDIA_DOMAINS_FLAG = "--allowed-media-domains"


def media_domains_args(detected: DetectedEngine, since: str, extras: Extras) -> list[str]:
    """`--allowed-media-domains HOST...` for an engine of version `since` or newer (older
    ones refuse to start on the flag; an unknown version gets none either)."""
    if not detected.version or version_key(detected.version) < version_key(since):
        return []
    return [MEDIA_DOMAINS_FLAG, *(extras.media_domains or (NO_MEDIA_HOST,))]


def refuse(message: str) -> NoReturn:
    raise InvalidInputError(message)


def check_choices(
    spec: EngineSpec, params: LaunchParams, accepts: set[str], hints: dict[str, str]
) -> None:
    """Refuse, in words, every choice this engine cannot honour."""
    for name, words in CHOICES.items():
        value = getattr(params, name)
        # Unset is the field's default; thinking=False is a choice, unlike its default None.
        if name in accepts or value == type(params).model_fields[name].default:
            continue
        hint = hints.get(name, "Clear it, or choose another engine.")
        refuse(f"{spec.title} does not take {words} ({name}). {hint}")


def check_extra_args(spec: EngineSpec, params: LaunchParams, owned: tuple[str, ...]) -> None:
    """Extra arguments may not override what Roundhouse sets, carry a secret, or change the
    listener or the trust model; argparse engines (Python's) also take flag prefixes."""
    extra_args.check_extra_args(
        spec.title, params.extra_args, owned, prefixes=bool(spec.python_modules)
    )


def check_host(params: LaunchParams) -> None:
    if params.host not in LOOPBACK:
        refuse(
            f"Engines listen on this machine only (127.0.0.1), not on {params.host}: "
            "the Roundhouse gateway is the door to other machines."
        )


def require_model(spec: EngineSpec, params: LaunchParams) -> str:
    if not params.model:
        refuse(f"Choose a model for {spec.title}.")
    return params.model


def model_format(params: LaunchParams) -> ModelFormat | None:
    """The format the user gave, else what the name says (only .gguf is certain)."""
    if params.model_format is not None:
        return params.model_format
    if params.model and params.model.lower().endswith(".gguf"):
        return ModelFormat.GGUF
    return None


def check_format(spec: EngineSpec, params: LaunchParams, why_not: dict[ModelFormat, str]) -> None:
    fmt = model_format(params)
    if fmt is not None and fmt not in spec.formats:
        served = ", ".join(f.value.upper() for f in spec.formats)
        reason = why_not.get(fmt, f"{spec.title} serves {served} models.")
        refuse(f"{spec.title} cannot serve a {fmt.value.upper()} model. {reason}")


def is_local_path(model: str) -> bool:
    """A folder or file (absolute or ./relative), as opposed to a Hub repo id."""
    if PurePosixPath(model).is_absolute() or PureWindowsPath(model).is_absolute():
        return True
    return model.startswith(("./", "../", ".\\", "..\\"))


def hub_env(models: list[str], extras: Extras) -> dict[str, str]:
    """Hugging Face settings for engines that load from the Hub's cache."""
    env: dict[str, str] = {}
    if extras.hf_hub_cache:
        env["HF_HUB_CACHE"] = extras.hf_hub_cache
    # Local folders need no Hub; offline also stops a stray request from downloading.
    if all(is_local_path(m) for m in models):
        env["HF_HUB_OFFLINE"] = "1"
    return env


def one_length(spec: EngineSpec, params: LaunchParams) -> int | None:
    """vLLM and SGLang have one length limit; ctx_size and max_model_len both name it."""
    ctx = params.ctx_size or None  # 0 means "the model's own", as in llama.cpp
    if ctx and params.max_model_len and ctx != params.max_model_len:
        refuse(
            f"{spec.title} has one length limit, but the context size ({ctx}) and the "
            f"maximum model length ({params.max_model_len}) differ. Set one of them."
        )
    return params.max_model_len or ctx


def one_kv_type(spec: EngineSpec, params: LaunchParams, setting: str) -> str | None:
    k, v = params.cache_type_k, params.cache_type_v
    if k and v and k != v:
        refuse(
            f"{spec.title} uses one KV cache type for keys and values ({setting}), "
            f"but K is {k} and V is {v}. Set the same type for both."
        )
    return k or v


# The guard that Python engines load at start-up (resources/engines/guard/sitecustomize.py):
# their HTTP server then refuses requests without the key, for foreign Hosts, and from web
# pages (ADR 21). The key names the environment variable that guard reads.
GUARD_KEY_ENV = "ROUNDHOUSE_ENGINE_KEY"


def python_guard_env(extras: Extras) -> dict[str, str]:
    """The environment that puts a Python engine (mlx_lm.server, vLLM, SGLang) behind the key.

    PYTHONPATH is replaced, not extended: it holds the guard alone, so a user's stray
    PYTHONPATH can neither shadow the engine's packages nor the guard.
    """
    if not extras.api_key:
        return {}
    return {
        "PYTHONPATH": str(resource_path("engines", "guard")),
        GUARD_KEY_ENV: extras.api_key,
    }


def command(spec: EngineSpec, detected: DetectedEngine) -> list[str]:
    """How to start the engine that detection found: its executable or `python -m`."""
    if detected.path:
        return [detected.path]
    if detected.python and detected.module:
        return [detected.python, "-m", detected.module]
    refuse(f"{spec.title} was found without a program to run; detect it again.")


def host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def plan(
    spec: EngineSpec,
    params: LaunchParams,
    argv: list[str],
    env: dict[str, str],
    *,
    expected_model_id: str | None,
    metrics: bool,
    secret_env: tuple[str, ...] = (),
    notes: tuple[str, ...] = (),
) -> LaunchPlan:
    base = f"http://{host_port(params.host, params.port)}"
    metrics_url = base + spec.metrics_path if spec.metrics_path and metrics else None
    return LaunchPlan(
        engine=spec.id,
        argv=tuple(argv),
        env=env,
        secret_env=secret_env,
        host=params.host,
        port=params.port,
        base_url=base,
        probe_url=base + spec.readiness.path,
        readiness=spec.readiness,
        models_url=base + spec.models_path,
        metrics_url=metrics_url,
        expected_model_id=expected_model_id,
        stop=spec.stop,
        stop_grace_s=spec.stop_grace_s,
        notes=notes,
    )


def opt(argv: list[str], flag: str, value: object) -> None:
    """Append `flag value` when the value is set."""
    if value is not None:
        argv += [flag, str(value)]


def check_params(
    spec: EngineSpec,
    params: LaunchParams,
    *,
    accepts: set[str],
    hints: dict[str, str],
    why_not: dict[ModelFormat, str],
    owned: tuple[str, ...] = (),
) -> None:
    """Every engine's checks, in one order: the model's format, the choices, extra arguments."""
    check_format(spec, params, why_not)
    check_choices(spec, params, accepts, hints)
    check_extra_args(spec, params, owned)
