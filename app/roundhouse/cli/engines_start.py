"""`roundhouse engines start|restart`: launch an instance, wait until it serves, say where."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import click

from roundhouse.cli.daemon_link import daemon_client, home_of, run_async
from roundhouse.cli.engines_capabilities import (
    capability_options,
    capability_values,
    wants_auto_moe,
    with_proposed_moe,
)
from roundhouse.cli.engines_common import ENGINE_IDS, resolve_id

if TYPE_CHECKING:
    from roundhouse.api.instances import InstanceInfo
    from roundhouse.client import DaemonClient

POLL_S = 0.25
# How long the settings line waits for the daemon to read the engine's load report.
MEMORY_WAIT_S = 3.0


def _gpu_layers(value: str | None) -> int | Literal["auto", "all"] | None:
    if value is None:
        return None
    if value == "auto":
        return "auto"
    if value == "all":
        return "all"
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter("give a number of layers, 'auto' or 'all'") from None


def _rpc(values: tuple[str, ...]) -> tuple[str, ...]:
    """--rpc given once with commas or several times: one address each."""
    return tuple(p.strip() for v in values for p in v.split(",") if p.strip())


def _split(value: str | None) -> tuple[float, ...]:
    from roundhouse.cli.output import fail

    if value is None or value.strip().lower() == "auto":
        return ()
    try:
        return tuple(float(p) for p in value.split(","))
    except ValueError:
        fail(f"--split takes shares such as 3,1 (one per device), or auto; not {value!r}.")


@click.command()
# exo is attached, never started: the daemon says so in words.
@click.argument("engine", type=click.Choice((*ENGINE_IDS, "exo")))
@click.option("--model", "-m", help="GGUF file, model folder, Hugging Face repo id or Ollama tag.")
@click.option("--preset", help="Start with the options saved under this name for the model.")
@click.option("--save-preset", metavar="NAME", help="Save these options for the model as NAME.")
@click.option("--port", type=click.IntRange(1, 65535), help="Port (default: a free one).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--ctx-size", "-c", type=click.IntRange(0), help="Context size in tokens.")
@click.option("--gpu-layers", "-ngl", help="Layers on the GPU: a number, 'auto' or 'all'.")
@click.option("--threads", "-t", type=click.IntRange(1), help="CPU threads.")
@click.option("--parallel", "-np", type=click.IntRange(1), help="Parallel request slots.")
@click.option("--flash-attn", type=click.Choice(["on", "off", "auto"]), help="Flash attention.")
@click.option("--cache-type-k", help="KV cache type of K (f16, q8_0, q4_0, ...).")
@click.option("--cache-type-v", help="KV cache type of V.")
@click.option("--served-name", help="Name the model is served as.")
@click.option("--tensor-parallel", "-tp", type=click.IntRange(1), help="vLLM/SGLang: GPUs.")
@click.option("--pipeline-parallel", "-pp", type=click.IntRange(1), help="vLLM: stages.")
@click.option(
    "--gpu-memory-utilization",
    type=click.FloatRange(0, 1, min_open=True),
    help="vLLM/SGLang: the share of the GPU's memory the engine may take (0-1).",
)
@click.option("--max-model-len", type=click.IntRange(1), help="vLLM/SGLang: context length.")
@click.option(
    "--memory-report",
    is_flag=True,
    help="llama.cpp: log at info level, so `engines memory` shows the engine's own buffers.",
)
@click.option(
    "--reranking",
    is_flag=True,
    help="llama.cpp: serve /v1/rerank through the gateway (a reranker model).",
)
@click.option(
    "--trust-remote-code",
    is_flag=True,
    help="vLLM/SGLang: run Python code from the model's repository (only one you trust).",
)
@click.option(
    "--tool-parser",
    metavar="NAME",
    help="vLLM/SGLang: the tool-call parser (default: chosen for the model; 'none': off).",
)
@click.option(
    "--reasoning-parser",
    metavar="NAME",
    help="vLLM/SGLang: the reasoning parser; llama.cpp: its --reasoning-format "
    "(default: chosen for the model; 'none': thoughts stay in the content).",
)
@click.option(
    "--rpc",
    "rpc",
    multiple=True,
    metavar="HOST:PORT[,HOST:PORT]",
    help="llama.cpp: split the model over these rpc-servers (other machines'); those on "
    "127.0.0.1 are started and stopped with the instance.",
)
@click.option(
    "--split",
    metavar="N,N,...",
    help="llama.cpp with --rpc: each device's share, the RPC workers first, then this "
    "machine's GPUs (default 'auto': by each one's free memory).",
)
@click.option(
    "--across",
    "across",
    multiple=True,
    metavar="PEER[,PEER]",
    help="llama.cpp: split the model across these paired machines (names or ids): each "
    "lends an rpc-server on its loopback, reached over mutual TLS; released when it stops.",
)
@click.option(
    "--mmproj",
    metavar="FILE",
    help="llama.cpp: the vision projector GGUF that reads images for the model (default: "
    "the mmproj*.gguf beside the model, if any; 'none': start without one).",
)
@capability_options
@click.option("--extra-arg", "extra_args", multiple=True, help="Pass one more argument as is.")
@click.option("--no-wait", is_flag=True, help="Return once the engine is launched.")
@click.option("--json", "as_json", is_flag=True, help="Print the instance as JSON.")
@click.pass_context
def start(ctx: click.Context, /, engine: str, **opts: Any) -> None:
    """Start ENGINE with a model; print the instance id and the OpenAI base URL to use.

    Waits until the engine serves (Ctrl+C stops it again), unless --no-wait.
    """
    from pydantic import ValidationError

    from roundhouse.api.engines import EngineId, InstanceOptions
    from roundhouse.api.instances import StartRequest
    from roundhouse.cli.output import fail

    try:
        options = InstanceOptions(
            model=opts["model"],
            ctx_size=opts["ctx_size"],
            n_gpu_layers=_gpu_layers(opts["gpu_layers"]),
            threads=opts["threads"],
            parallel=opts["parallel"],
            flash_attn=opts["flash_attn"],
            cache_type_k=opts["cache_type_k"],
            cache_type_v=opts["cache_type_v"],
            served_name=opts["served_name"],
            tensor_parallel=opts["tensor_parallel"],
            pipeline_parallel=opts["pipeline_parallel"],
            gpu_memory_utilization=opts["gpu_memory_utilization"],
            max_model_len=opts["max_model_len"],
            extra_args=tuple(opts["extra_args"]),
            memory_report=opts["memory_report"],
            reranking=opts["reranking"],
            trust_remote_code=opts["trust_remote_code"],
            tool_parser=opts["tool_parser"],
            reasoning_parser=opts["reasoning_parser"],
            rpc=_rpc(opts["rpc"]),
            tensor_split=_split(opts["split"]),
            across=_rpc(opts["across"]),
            mmproj=opts["mmproj"],
            **capability_values(opts),
        )
        if options.trust_remote_code:
            click.echo(
                "Warning: with --trust-remote-code the engine runs Python code from the "
                "model's repository, with your rights. Use it only for repositories you trust.",
                err=True,
            )
        request = StartRequest(
            engine=EngineId(engine),
            options=options,
            preset=opts["preset"],
            host=opts["host"],
            port=opts["port"],
        )
    except ValidationError as exc:
        fail("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))
    if (opts["save_preset"] or opts["preset"]) and not options.model:
        fail("Presets are saved per model: give --model.")
    info = run_async(
        _start(
            ctx,
            request,
            opts["save_preset"],
            not opts["no_wait"],
            opts["as_json"],
            auto_moe=wants_auto_moe(opts),
        )
    )
    _report_started(info, opts["as_json"], _gateway_url(ctx))


async def _start(
    ctx: click.Context,
    request: Any,
    save_as: str | None,
    wait: bool,
    quiet: bool,
    *,
    auto_moe: bool = False,
) -> InstanceInfo:
    import asyncio

    from roundhouse.api.instances import InstanceStatus, Preset

    async with daemon_client(ctx) as client:
        if auto_moe:
            request = await with_proposed_moe(client, request)
        if not quiet:
            await _say_fit(client, request)
        if save_as:
            assert request.options.model is not None
            await client.save_preset(
                Preset(
                    engine=request.engine,
                    model=request.options.model,
                    name=save_as,
                    options=request.options,
                )
            )
        info = await client.start_instance(request)
        if not wait:
            return info
        try:
            info = await _wait_ready(client, info, quiet)
            return info if quiet else await _with_memory(client, info)
        except (KeyboardInterrupt, asyncio.CancelledError):
            if info.status != InstanceStatus.READY:
                await client.stop_instance(info.id)
            raise


async def _say_fit(client: DaemonClient, request: Any) -> None:
    """Before a llama.cpp start of a local file: will it fit, as these options run it?"""
    from roundhouse.api.engines import EngineId
    from roundhouse.api.fit import FitQuery, FitVerdict
    from roundhouse.cli.models_view import fit_line
    from roundhouse.cli.output import err_console
    from roundhouse.client import ClientError

    model = request.options.model
    if request.engine != EngineId.LLAMA_CPP or not model or not model.endswith(".gguf"):
        return
    try:
        # The same path the start request carries, as the daemon will open it.
        fit = await client.fit_model(FitQuery(path=model, instance=request.options))
    except ClientError as exc:
        err_console.print(f"[dim]No fit estimate: {exc}[/]", highlight=False)
        return
    err_console.print(fit_line(fit))
    if request.options.rpc or request.options.across:
        # The estimate is of this machine alone: the workers take their share of it.
        workers = len(request.options.rpc) + len(request.options.across)
        err_console.print(
            f"  This machine alone; split with {workers} RPC worker"
            f"{'s' if workers > 1 else ''}, which hold their share of the layers.",
            highlight=False,
        )
        if request.options.across and fit.report.verdict != FitVerdict.DOES_NOT_FIT:
            err_console.print(
                "  It fits on this machine: one machine is faster than a split, which "
                "sends every token across the network and back.",
                highlight=False,
            )
        return
    for advice in fit.report.advice[:2]:
        err_console.print(f"  {advice.text}", highlight=False)


async def _wait_ready(client: DaemonClient, info: InstanceInfo, quiet: bool) -> InstanceInfo:
    import asyncio

    from roundhouse.api.instances import InstanceStatus
    from roundhouse.cli.output import err_console

    settled = (InstanceStatus.READY, InstanceStatus.FAILED)
    if quiet:
        while info.status not in settled:
            await asyncio.sleep(POLL_S)
            info = await client.instance(info.id)
        return info
    with err_console.status(_progress_words(info)) as status:
        while info.status not in settled:
            await asyncio.sleep(POLL_S)
            info = await client.instance(info.id)
            status.update(_progress_words(info))
    return info


async def _with_memory(client: DaemonClient, info: InstanceInfo) -> InstanceInfo:
    """The instance once the daemon has read what the engine chose (its load report is read
    just after the engine answers as ready); as it is after MEMORY_WAIT_S."""
    import asyncio

    from roundhouse.api.instances import InstanceStatus

    waited = 0.0
    while info.status == InstanceStatus.READY and info.memory is None and waited < MEMORY_WAIT_S:
        await asyncio.sleep(POLL_S)
        waited += POLL_S
        info = await client.instance(info.id)
    return info


def settings_words(info: InstanceInfo) -> str | None:
    """'a 2,048-token context (1 slot), 0 of 3 layers on the GPU, 2 threads': what the
    engine runs with, from its load report where the options left it to the engine."""
    from roundhouse.api.engines import EngineId

    options = info.options
    if options is None:
        return None
    memory = info.memory
    report = memory.estimate if memory is not None else None
    actual = memory.actual if memory is not None else None
    words = []
    slots = report.n_parallel if report is not None else options.parallel
    if report is not None:
        context = report.context_length * report.n_parallel
        words.append(f"a {context:,}-token context ({slots} slot{'s' if slots != 1 else ''})")
    elif options.ctx_size:
        words.append(f"a {options.ctx_size:,}-token context")
    if actual is not None and actual.offloaded_layers is not None and actual.total_layers:
        words.append(f"{actual.offloaded_layers} of {actual.total_layers} layers on the GPU")
    elif options.n_gpu_layers is not None:
        words.append(f"GPU layers: {options.n_gpu_layers}")
    if options.threads:
        words.append(f"{options.threads} threads")
    elif "-t" not in info.argv and info.engine == EngineId.LLAMA_CPP:
        words.append("threads: the engine's default (the CPU's cores)")
    return ", ".join(words) or None


def _progress_words(info: InstanceInfo) -> str:
    waited = f" {info.waited_s:.0f} s" if info.waited_s is not None else ""
    probe = f" ({info.probe_status})" if info.probe_status else ""
    return f"{info.engine.value} {info.status.value}{waited}{probe}"


def _gateway_url(ctx: click.Context) -> str:
    """The gateway's base URL: the daemon's address and /v1 (where apps reach models)."""
    from roundhouse.client.locate import locate

    return f"{locate(home_of(ctx)).discovery.url}/v1"


def _report_started(info: InstanceInfo, as_json: bool, gateway_url: str) -> None:
    from roundhouse.api.instances import InstanceOrigin, InstanceStatus
    from roundhouse.cli.gateway_view import curl_example
    from roundhouse.cli.output import console, err_console, print_json

    if as_json:
        print_json(info)
    elif info.status == InstanceStatus.FAILED:
        pass
    else:
        model = info.models[0] if info.models else (info.model or "its model")
        console.print(f"Instance [bold]{info.id}[/] ({info.status.value})", highlight=False)
        # The engine's own port answers only Roundhouse (ADR 21): apps use the gateway.
        base_url = info.base_url if info.origin == InstanceOrigin.EXTERNAL else gateway_url
        console.print(f"OpenAI base URL: {base_url}", highlight=False)
        settings = settings_words(info)
        if settings:
            console.print(f"Runs with: {settings}", highlight=False)
        if info.status == InstanceStatus.READY:
            console.print(f"Try: {curl_example(base_url, model)}", highlight=False, soft_wrap=True)
    if info.status == InstanceStatus.FAILED:
        err_console.print(f"[bold red]Error:[/] {info.error}", highlight=False)
        if info.last_exit and info.last_exit.log_tail:
            err_console.print("Last log lines:", highlight=False)
            for line in info.last_exit.log_tail:
                err_console.print(f"  {line}", highlight=False, markup=False)
        err_console.print(
            f"The instance stays listed as failed; dismiss it with "
            f"`roundhouse engines stop {info.id}`.",
            highlight=False,
        )
        raise SystemExit(1)


@click.command()
@click.argument("instance_id")
@click.option("--no-wait", is_flag=True, help="Return once the engine is launched.")
@click.option("--json", "as_json", is_flag=True, help="Print the instance as JSON.")
@click.pass_context
def restart(ctx: click.Context, instance_id: str, no_wait: bool, as_json: bool) -> None:
    """Stop an instance and start it again with the same options."""

    async def main() -> InstanceInfo:
        async with daemon_client(ctx) as client:
            resolved = await resolve_id(client, instance_id)
            info = await client.restart_instance(resolved)
            return info if no_wait else await _wait_ready(client, info, as_json)

    _report_started(run_async(main()), as_json, _gateway_url(ctx))
