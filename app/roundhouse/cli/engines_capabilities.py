"""`engines start`'s capability options: MoE experts in RAM, drafts, reasoning, LoRA (ADR 48)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click

if TYPE_CHECKING:
    from roundhouse.api.instances import StartRequest
    from roundhouse.client import DaemonClient

F = TypeVar("F", bound=Callable[..., Any])
AUTO = "auto"


def capability_options(command: F) -> F:
    """Add the capability options to `command` (in this order in --help)."""
    options = (
        click.option(
            "--n-cpu-moe",
            metavar="N|all|auto",
            help="llama.cpp: keep the experts of the first N layers of a mixture-of-experts "
            "model in RAM, so the rest fits on the GPU ('all': every layer's; 'auto': the "
            "N the fit estimate proposes).",
        ),
        click.option(
            "--draft-model",
            help="A smaller model of the same family that drafts tokens for this one "
            "(speculative decoding). llama.cpp: a GGUF; MLX, vLLM, SGLang: a folder or repo.",
        ),
        click.option(
            "--num-draft-tokens",
            type=click.IntRange(1),
            help="The most tokens the draft model proposes at a time.",
        ),
        click.option(
            "--draft-min", type=click.IntRange(0), help="llama.cpp: the fewest draft tokens used."
        ),
        click.option(
            "--draft-gpu-layers",
            metavar="N|auto|all",
            help="llama.cpp: the draft model's layers on the GPU.",
        ),
        click.option(
            "--thinking/--no-thinking",
            default=None,
            help="Reasoning on or off for every request (llama.cpp, vLLM); default: the "
            "model's own.",
        ),
        click.option(
            "--reasoning-budget",
            type=click.IntRange(-1),
            help="llama.cpp: the most tokens a reply may think for (-1: no limit, 0: off).",
        ),
        click.option(
            "--reasoning-effort",
            type=click.Choice(["minimal", "low", "medium", "high"]),
            help="llama.cpp: the reasoning effort given to the chat template.",
        ),
        click.option(
            "--lora",
            "lora",
            multiple=True,
            metavar="PATH",
            help="A LoRA adapter to apply (repeat for more). llama.cpp: a LoRA GGUF; vLLM "
            "and SGLang: an adapter folder.",
        ),
        click.option(
            "--lora-scaled",
            "lora_scaled",
            multiple=True,
            nargs=2,
            type=(str, float),
            metavar="PATH SCALE",
            help="llama.cpp: a LoRA adapter at this strength (1: as trained).",
        ),
    )
    for option in reversed(options):
        command = option(command)
    return command


def _layers(value: str | None, flag: str) -> int | Literal["auto", "all"] | None:
    if value is None or value in ("auto", "all"):
        return value  # type: ignore[return-value]
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter(f"{flag} takes a number, 'auto' or 'all'") from None


def _cpu_moe(value: str | None) -> int | Literal["all"] | None:
    if value is None or value == AUTO:
        return None
    if value == "all":
        return "all"
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter("--n-cpu-moe takes a number, 'all' or 'auto'") from None


def capability_values(opts: dict[str, Any]) -> dict[str, Any]:
    """The InstanceOptions fields the capability options give."""
    lora = [{"path": p} for p in opts["lora"]]
    lora += [{"path": p, "scale": s} for p, s in opts["lora_scaled"]]
    return {
        "n_cpu_moe": _cpu_moe(opts["n_cpu_moe"]),
        "draft_model": opts["draft_model"],
        "num_draft_tokens": opts["num_draft_tokens"],
        "draft_min": opts["draft_min"],
        "draft_gpu_layers": _layers(opts["draft_gpu_layers"], "--draft-gpu-layers"),
        "thinking": opts["thinking"],
        "reasoning_budget": opts["reasoning_budget"],
        "reasoning_effort": opts["reasoning_effort"],
        "lora": tuple(lora),
    }


def wants_auto_moe(opts: dict[str, Any]) -> bool:
    return bool(opts["n_cpu_moe"] == AUTO)


async def with_proposed_moe(client: DaemonClient, request: StartRequest) -> StartRequest:
    """`--n-cpu-moe auto`: the N the fit estimate proposes, said in words; none when the
    model fits without or is not a mixture of experts."""
    from roundhouse.api.engines import EngineId
    from roundhouse.api.fit import AdviceKind, FitQuery
    from roundhouse.cli.output import err_console, fail

    options = request.options
    if request.engine != EngineId.LLAMA_CPP or not options.model:
        fail("--n-cpu-moe auto is for llama.cpp with a GGUF file: give a number instead.")
    fit = await client.fit_model(FitQuery(path=options.model, instance=options))
    proposed = next((a for a in fit.report.advice if a.kind == AdviceKind.CPU_MOE), None)
    if proposed is None or not isinstance(proposed.value, int) or proposed.value == 0:
        err_console.print(
            "--n-cpu-moe auto: no experts need to stay in RAM (the model fits as it is, "
            "or has no experts).",
            highlight=False,
        )
        return request
    err_console.print(f"--n-cpu-moe auto: {proposed.value}. {proposed.text}", highlight=False)
    update = {"n_cpu_moe": proposed.value, "n_gpu_layers": options.n_gpu_layers or "all"}
    return request.model_copy(update={"options": options.model_copy(update=update)})
