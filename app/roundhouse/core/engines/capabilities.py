"""The engines' capabilities as flags: MoE experts in RAM, drafts, reasoning, LoRA (ADR 48).

Flags checked against llama-server's own `--help` (the 2026 builds, after the speculative
options were renamed `--spec-draft-*`; `-md` and `-ngld` are spelled the same before and
after), vLLM's `--speculative-config`, `--enable-lora`/`--lora-modules` and
`--default-chat-template-kwargs`, and SGLang's `--speculative-*` and `--lora-paths`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import PurePath

from roundhouse.api.engines import InstanceOptions, LoraAdapter
from roundhouse.core.engines.extra_args import flags_given
from roundhouse.core.errors import InvalidInputError

# Per option, the flags that set the same thing: given in the extra arguments as well as
# the option, the engine would get it twice (and llama.cpp keeps the last one silently).
LLAMA_FLAGS: dict[str, tuple[str, ...]] = {
    "n_cpu_moe": ("-ncmoe", "--n-cpu-moe", "-cmoe", "--cpu-moe"),
    "draft_model": ("-md", "--model-draft", "--spec-draft-model"),
    "num_draft_tokens": ("--spec-draft-n-max", "--draft-max", "--draft", "--draft-n"),
    "draft_min": ("--spec-draft-n-min", "--draft-min", "--draft-n-min"),
    "draft_gpu_layers": (
        "-ngld", "--gpu-layers-draft", "--n-gpu-layers-draft", "--spec-draft-ngl",
    ),
    "thinking": ("-rea", "--reasoning", "--reasoning-budget"),
    "reasoning_budget": ("--reasoning-budget",),
    "reasoning_effort": ("--reasoning-effort",),
    "lora": ("--lora", "--lora-scaled"),
}  # fmt: skip
VLLM_FLAGS: dict[str, tuple[str, ...]] = {
    "draft_model": ("--speculative-config",),
    "num_draft_tokens": ("--speculative-config",),
    "thinking": ("--default-chat-template-kwargs",),
    "lora": ("--enable-lora", "--lora-modules"),
}
SGLANG_FLAGS: dict[str, tuple[str, ...]] = {
    "draft_model": ("--speculative-algorithm", "--speculative-draft-model-path"),
    "num_draft_tokens": ("--speculative-num-draft-tokens",),
    "lora": ("--lora-paths",),
}
# SGLang's algorithm for a separate, smaller draft model (EAGLE needs a trained head).
SGLANG_DRAFT_ALGORITHM = "STANDALONE"

HINTS_SERVERS = {
    "n_cpu_moe": (
        "It keeps the whole model on the GPUs: to hold a mixture-of-experts model's experts "
        "in RAM, run a GGUF build with llama.cpp."
    ),
    "draft_min": "Only llama.cpp takes a least number of draft tokens.",
    "draft_gpu_layers": "The draft model runs on the same GPUs as the model.",
    "reasoning_budget": (
        "Only llama.cpp limits thinking at the server; send max_tokens or the model's own "
        "budget with each request instead."
    ),
    "reasoning_effort": "Send reasoning_effort with each request instead.",
}
HINT_SGLANG_THINKING = (
    "SGLang takes thinking on or off with each request (chat_template_kwargs: "
    '{"enable_thinking": false}), not at the server.'
)
HINT_NO_CAPABILITIES = "Clear it, or choose llama.cpp, vLLM or SGLang."


def check_once(
    title: str,
    params: InstanceOptions,
    flags: dict[str, tuple[str, ...]],
    *,
    prefixes: bool,
) -> None:
    """Refuse an option that the extra arguments set as well, in words."""
    for name, names in flags.items():
        value = getattr(params, name)
        if value == type(params).model_fields[name].default:
            continue
        given = flags_given(params.extra_args, names, prefixes=prefixes)
        if given:
            raise InvalidInputError(
                f"{title} was given {name} and {sorted(given)[0]} in the extra arguments: "
                f"set it once (the {name} setting, or the extra argument)."
            )


def _check_draft_limits(params: InstanceOptions) -> None:
    limits = (params.num_draft_tokens, params.draft_min, params.draft_gpu_layers)
    if not params.draft_model and any(v is not None for v in limits):
        raise InvalidInputError(
            "Draft limits need a draft model: choose one (a smaller model of the same "
            "family), or clear the limits."
        )
    top, least = params.num_draft_tokens, params.draft_min
    if top is not None and least is not None and least > top:
        raise InvalidInputError(
            f"The least number of draft tokens ({least}) is above the most ({top}): lower it."
        )


def llama_cpp_args(params: InstanceOptions) -> list[str]:
    """llama-server's flags for the capabilities the options choose."""
    check_once("llama.cpp", params, LLAMA_FLAGS, prefixes=False)
    _check_draft_limits(params)
    argv: list[str] = []
    if params.n_cpu_moe == "all":
        argv.append("--cpu-moe")
    elif params.n_cpu_moe:
        argv += ["--n-cpu-moe", str(params.n_cpu_moe)]
    if params.draft_model:
        if not params.draft_model.lower().endswith(".gguf"):
            raise InvalidInputError(
                f"llama.cpp drafts with a GGUF file, not {params.draft_model!r}: choose a "
                "smaller GGUF model of the same family from the library."
            )
        argv += ["-md", params.draft_model]
    _opt(argv, "--spec-draft-n-max", params.num_draft_tokens)
    _opt(argv, "--spec-draft-n-min", params.draft_min)
    _opt(argv, "-ngld", params.draft_gpu_layers)
    argv += _llama_reasoning(params)
    argv += _llama_lora(params.lora)
    return argv


def _llama_reasoning(params: InstanceOptions) -> list[str]:
    budget, thinking = params.reasoning_budget, params.thinking
    if thinking is False and budget not in (None, 0):
        raise InvalidInputError(
            f"Thinking is off, yet its budget is {budget} tokens: clear the budget, or "
            "turn thinking on."
        )
    if thinking is True and budget == 0:
        raise InvalidInputError(
            "Thinking is on, yet its budget is 0 tokens (off): raise the budget, or set it "
            "to -1 for no limit."
        )
    argv: list[str] = []
    if thinking is True:
        argv += ["--reasoning", "on"]
    if thinking is False:
        # A budget of 0 ends the thinking at once: every build with a budget reads it so.
        budget = 0
    _opt(argv, "--reasoning-budget", budget)
    _opt(argv, "--reasoning-effort", params.reasoning_effort)
    return argv


def _llama_lora(adapters: Sequence[LoraAdapter]) -> list[str]:
    argv: list[str] = []
    for adapter in adapters:
        if "," in adapter.path:
            # Current builds split the flag's value at commas (several adapters in one).
            raise InvalidInputError(
                f"llama.cpp reads a comma as a list of adapters: rename {adapter.path!r} "
                "without one, or move it to a folder whose name has none."
            )
        if adapter.scale == 1.0:
            argv += ["--lora", adapter.path]
        else:
            argv += ["--lora-scaled", f"{adapter.path}:{adapter.scale:g}"]
    return argv


def _adapter_names(title: str, adapters: Sequence[LoraAdapter]) -> list[tuple[str, str]]:
    """Each adapter's served name (its folder's or repo's last part) and path; the engines
    serve an adapter as a model of that name."""
    named: list[tuple[str, str]] = []
    for adapter in adapters:
        if adapter.scale != 1.0:
            raise InvalidInputError(
                f"{title} applies a LoRA adapter at full strength: set its scale to 1, or "
                "run a GGUF build with llama.cpp, which scales it."
            )
        name = PurePath(adapter.path.rstrip("/\\")).name or adapter.path
        if any(name == n for n, _ in named):
            raise InvalidInputError(
                f"Two LoRA adapters are both named {name!r}: {title} serves each under its "
                "folder's name, so rename one of the folders."
            )
        named.append((name, adapter.path))
    return named


def vllm_args(params: InstanceOptions) -> list[str]:
    """vLLM's flags for the capabilities the options choose."""
    check_once("vLLM", params, VLLM_FLAGS, prefixes=True)
    argv: list[str] = []
    if params.num_draft_tokens is not None and not params.draft_model:
        raise InvalidInputError("A number of draft tokens needs a draft model: choose one.")
    if params.draft_model:
        if params.num_draft_tokens is None:
            raise InvalidInputError(
                "vLLM needs the number of tokens the draft model proposes at a time: set the "
                "draft tokens (3 to 5 is usual)."
            )
        config = {"model": params.draft_model, "num_speculative_tokens": params.num_draft_tokens}
        argv += ["--speculative-config", json.dumps(config)]
    if params.thinking is not None:
        kwargs = {"enable_thinking": params.thinking}
        argv += ["--default-chat-template-kwargs", json.dumps(kwargs)]
    if params.lora:
        modules = [f"{name}={path}" for name, path in _adapter_names("vLLM", params.lora)]
        argv += ["--enable-lora", "--lora-modules", *modules]
    return argv


def sglang_args(params: InstanceOptions) -> list[str]:
    """SGLang's flags for the capabilities the options choose."""
    check_once("SGLang", params, SGLANG_FLAGS, prefixes=True)
    argv: list[str] = []
    if params.num_draft_tokens is not None and not params.draft_model:
        raise InvalidInputError("A number of draft tokens needs a draft model: choose one.")
    if params.draft_model:
        argv += ["--speculative-algorithm", SGLANG_DRAFT_ALGORITHM]
        argv += ["--speculative-draft-model-path", params.draft_model]
        _opt(argv, "--speculative-num-draft-tokens", params.num_draft_tokens)
    if params.lora:
        paths = [f"{name}={path}" for name, path in _adapter_names("SGLang", params.lora)]
        argv += ["--lora-paths", *paths]
    return argv


def draft_and_adapters(params: InstanceOptions) -> list[str]:
    """The model files a start reads besides the model: the draft and the adapters."""
    return [*([params.draft_model] if params.draft_model else []), *(a.path for a in params.lora)]


def _opt(argv: list[str], flag: str, value: object) -> None:
    if value is not None:
        argv += [flag, str(value)]
