"""`roundhouse engines ...`: list engines, start, watch, stop and read the logs of instances."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Literal

import click

if TYPE_CHECKING:
    from roundhouse.api.installs import InstallJob
    from roundhouse.api.instances import InstanceInfo
    from roundhouse.client import DaemonClient

ENGINE_IDS = ("llama.cpp", "ollama", "mlx", "vllm", "sglang")
POLL_S = 0.25


def _home(ctx: click.Context) -> Any:
    from roundhouse.cli.main import home_of

    return home_of(ctx)


def _run(coro: Any) -> Any:
    from roundhouse.cli.main import run_async

    return run_async(coro)


def _client(ctx: click.Context) -> DaemonClient:
    from roundhouse.client import DaemonClient

    return DaemonClient.for_home(_home(ctx))


@click.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="With no command: print JSON.")
@click.option("--refresh", is_flag=True, help="With no command: look for engines again.")
@click.pass_context
def engines(ctx: click.Context, as_json: bool, refresh: bool) -> None:
    """Engines and their instances. With no command: the engines found here (as `list`)."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_engines, as_json=as_json, refresh=refresh)


@engines.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--refresh", is_flag=True, help="Look for engines again instead of the cache.")
@click.pass_context
def list_engines(ctx: click.Context, as_json: bool = False, refresh: bool = False) -> None:
    """List the engines Roundhouse knows, which are installed here, and their versions."""
    from roundhouse.cli.engines_view import engines_view
    from roundhouse.cli.main import show_from_daemon

    show_from_daemon(ctx, as_json, lambda c: c.engines(refresh=refresh), engines_view)


@engines.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def ps(ctx: click.Context, as_json: bool) -> None:
    """List running instances: id, engine, model, status, address, uptime, memory."""
    from roundhouse.cli.instances_view import instances_view
    from roundhouse.cli.main import show_from_daemon

    show_from_daemon(ctx, as_json, lambda c: c.instances(), instances_view)


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


@engines.command()
@click.argument("engine", type=click.Choice(ENGINE_IDS))
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
@click.option("--draft-model", help="MLX: a draft model for speculative decoding.")
@click.option("--num-draft-tokens", type=click.IntRange(1), help="MLX: tokens drafted per step.")
@click.option(
    "--memory-report",
    is_flag=True,
    help="llama.cpp: log at info level, so `engines memory` shows the engine's own buffers.",
)
@click.option("--extra-arg", "extra_args", multiple=True, help="Pass one more argument as is.")
@click.option("--no-wait", is_flag=True, help="Return once the engine is launched.")
@click.option("--json", "as_json", is_flag=True, help="Print the instance as JSON.")
@click.pass_context
def start(ctx: click.Context, /, engine: str, **opts: Any) -> None:
    """Start ENGINE with a model; print the instance id and its OpenAI base URL.

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
            draft_model=opts["draft_model"],
            num_draft_tokens=opts["num_draft_tokens"],
            extra_args=tuple(opts["extra_args"]),
            memory_report=opts["memory_report"],
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
    info = _run(_start(ctx, request, opts["save_preset"], not opts["no_wait"], opts["as_json"]))
    _report_started(info, opts["as_json"])


async def _start(
    ctx: click.Context, request: Any, save_as: str | None, wait: bool, quiet: bool
) -> InstanceInfo:
    import asyncio

    from roundhouse.api.instances import InstanceStatus, Preset

    async with _client(ctx) as client:
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
            return await _wait_ready(client, info, quiet)
        except (KeyboardInterrupt, asyncio.CancelledError):
            if info.status != InstanceStatus.READY:
                await client.stop_instance(info.id)
            raise


async def _say_fit(client: DaemonClient, request: Any) -> None:
    """Before a llama.cpp start of a local file: will it fit, as these options run it?"""
    from roundhouse.api.engines import EngineId
    from roundhouse.api.fit import FitQuery
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


def _progress_words(info: InstanceInfo) -> str:
    waited = f" {info.waited_s:.0f} s" if info.waited_s is not None else ""
    probe = f" ({info.probe_status})" if info.probe_status else ""
    return f"{info.engine.value} {info.status.value}{waited}{probe}"


def _report_started(info: InstanceInfo, as_json: bool) -> None:
    from roundhouse.api.instances import InstanceStatus
    from roundhouse.cli.output import console, err_console, print_json

    if as_json:
        print_json(info)
    elif info.status == InstanceStatus.FAILED:
        pass
    else:
        model = info.models[0] if info.models else (info.model or "its model")
        console.print(f"Instance [bold]{info.id}[/] ({info.status.value})", highlight=False)
        console.print(f"OpenAI base URL: {info.base_url}", highlight=False)
        if info.status == InstanceStatus.READY:
            console.print(
                f"Try: curl {info.base_url}/chat/completions "
                "-H 'Content-Type: application/json' "
                f'-d \'{{"model": "{model}", '
                '"messages": [{"role": "user", "content": "Hi"}]}\'',
                highlight=False,
                soft_wrap=True,
            )
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


async def _resolve_id(client: DaemonClient, wanted: str) -> str:
    """The instance id that `wanted` is, or the only one it begins."""
    from roundhouse.cli.output import fail

    ids = [i.id for i in (await client.instances()).instances]
    if wanted in ids:
        return wanted
    matches = [i for i in ids if i.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        fail(f"No instance has the id {wanted!r}. List them with `roundhouse engines ps`.")
    fail(f"{wanted!r} begins several instance ids ({', '.join(matches)}): give more of it.")


@engines.command()
@click.argument("instance_ids", nargs=-1)
@click.option("--all", "stop_all", is_flag=True, help="Stop every instance Roundhouse runs.")
@click.option("--force", is_flag=True, help="Also stop engines Roundhouse did not start.")
@click.option("--json", "as_json", is_flag=True, help="Print the stopped instances as JSON.")
@click.pass_context
def stop(
    ctx: click.Context, instance_ids: tuple[str, ...], stop_all: bool, force: bool, as_json: bool
) -> None:
    """Stop instances by id (or the start of one): gracefully, then their whole tree.

    An added endpoint is detached. An engine found running that Roundhouse did not start is
    only stopped with --force.
    """
    from roundhouse.api.instances import InstanceOrigin
    from roundhouse.cli.output import console, fail, print_json

    if not instance_ids and not stop_all:
        fail("Name the instances to stop (see `roundhouse engines ps`), or give --all.")

    async def main() -> list[InstanceInfo]:
        async with _client(ctx) as client:
            if stop_all:
                listed = (await client.instances()).instances
                ids = [i.id for i in listed if i.origin != InstanceOrigin.EXTERNAL]
            else:
                ids = [await _resolve_id(client, wanted) for wanted in instance_ids]
            return [await client.stop_instance(i, force=force) for i in ids]

    stopped = _run(main())
    if as_json:
        print_json([i.model_dump(mode="json") for i in stopped])
        return
    if not stopped:
        console.print("No instance was running.")
    for info in stopped:
        how = f": {info.last_exit.message}" if info.last_exit else ""
        console.print(f"Stopped {info.id} ({info.engine.value}){how}.", highlight=False)


@engines.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def scan(ctx: click.Context, as_json: bool) -> None:
    """Look for engines already running (Ollama, llama-server, vLLM, SGLang, mlx_lm) and
    list every instance with them."""
    from roundhouse.cli.instances_view import instances_view
    from roundhouse.cli.main import show_from_daemon

    show_from_daemon(ctx, as_json, lambda c: c.scan_instances(), instances_view)


@engines.command()
@click.argument("url")
@click.option("--name", help="A name to show for it (default: the URL).")
@click.option("--ask-key", is_flag=True, help="Ask for an API key (hidden); kept in the keyring.")
@click.option("--api-key-stdin", is_flag=True, help="Read the API key from standard input.")
@click.option("--json", "as_json", is_flag=True, help="Print the endpoint as JSON.")
@click.pass_context
def attach(
    ctx: click.Context,
    url: str,
    name: str | None,
    ask_key: bool,
    api_key_stdin: bool,
    as_json: bool,
) -> None:
    """Attach to an OpenAI-compatible server Roundhouse does not run (LM Studio, Jan,
    LocalAI, another machine). `roundhouse engines stop ID` detaches it again."""
    import sys

    from roundhouse.api.instances import AddEndpointRequest
    from roundhouse.cli.output import console, fail, print_json

    key: str | None = None
    if api_key_stdin:
        key = sys.stdin.readline().strip() or None
    elif ask_key:
        key = click.prompt("API key", hide_input=True, default="", show_default=False) or None
    if key is not None and not key.isprintable():
        fail("The API key has characters that cannot be sent in a header.")

    async def main() -> InstanceInfo:
        async with _client(ctx) as client:
            return await client.add_endpoint(AddEndpointRequest(url=url, api_key=key, name=name))

    info = _run(main())
    if as_json:
        print_json(info)
        return
    served = ", ".join(info.models) or "no model listed"
    console.print(f"Attached {info.id}: {info.base_url} serves {served}.", highlight=False)


@engines.command()
@click.argument("instance_id")
@click.option("--no-wait", is_flag=True, help="Return once the engine is launched.")
@click.option("--json", "as_json", is_flag=True, help="Print the instance as JSON.")
@click.pass_context
def restart(ctx: click.Context, instance_id: str, no_wait: bool, as_json: bool) -> None:
    """Stop an instance and start it again with the same options."""

    async def main() -> InstanceInfo:
        async with _client(ctx) as client:
            resolved = await _resolve_id(client, instance_id)
            info = await client.restart_instance(resolved)
            return info if no_wait else await _wait_ready(client, info, as_json)

    _report_started(_run(main()), as_json)


@engines.command()
@click.argument("instance_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def metrics(ctx: click.Context, instance_id: str, as_json: bool) -> None:
    """Print an instance's own metrics (llama.cpp, vLLM, SGLang): tokens, requests."""
    from roundhouse.cli.instances_view import metrics_view
    from roundhouse.cli.main import show_from_daemon

    async def fetch(client: DaemonClient) -> Any:
        return await client.instance_metrics(await _resolve_id(client, instance_id))

    show_from_daemon(ctx, as_json, fetch, metrics_view)


@engines.command()
@click.argument("instance_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the instance's `memory`).")
@click.pass_context
def memory(ctx: click.Context, instance_id: str, as_json: bool) -> None:
    """Show what an instance's engine allocated per device beside the fit estimate."""
    from roundhouse.cli.memory_view import memory_view
    from roundhouse.cli.output import console, print_json

    async def main() -> InstanceInfo:
        async with _client(ctx) as client:
            return await client.instance(await _resolve_id(client, instance_id))

    info = _run(main())
    if not as_json:
        console.print(memory_view(info))
    elif info.memory is None:
        click.echo("null")
    else:
        print_json(info.memory)


@engines.command()
@click.argument("instance_id")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines until Ctrl+C.")
@click.option(
    "--lines",
    "-n",
    type=click.IntRange(1),
    default=100,
    show_default=True,
    help="How many of the last lines to print.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the lines as JSON.")
@click.pass_context
def logs(ctx: click.Context, instance_id: str, follow: bool, lines: int, as_json: bool) -> None:
    """Print an instance's output (the last --lines), and follow it with -f."""
    import sys

    from roundhouse.cli.output import print_json

    def write(chunk: list[str]) -> None:
        for line in chunk:
            sys.stdout.write(line + "\n")
        sys.stdout.flush()

    async def main() -> None:
        import asyncio

        async with _client(ctx) as client:
            resolved = await _resolve_id(client, instance_id)
            first = await client.instance_logs(resolved, since=0, limit=5000)
            # Read to the end, keeping the last `lines`.
            seen = first.lines
            page = first
            while len(page.lines) == 5000:
                page = await client.instance_logs(resolved, since=page.next, limit=5000)
                seen = [*seen, *page.lines][-lines:]
            if as_json:
                print_json({"id": resolved, "lines": seen[-lines:], "next": page.next})
                return
            write(seen[-lines:])
            since = page.next
            generation = page.generation
            while follow:
                await asyncio.sleep(0.5)
                page = await client.instance_logs(resolved, since=since)
                if page.generation != generation:
                    # The engine was restarted: its new process numbers lines from 0.
                    sys.stdout.write("[... the engine restarted]\n")
                    generation = page.generation
                    page = await client.instance_logs(resolved, since=0)
                if page.truncated:
                    sys.stdout.write("[... lines dropped: the engine wrote faster than read]\n")
                write(page.lines)
                since = page.next

    with contextlib.suppress(KeyboardInterrupt):
        _run(main())


@engines.command()
@click.option("--engine", type=click.Choice(ENGINE_IDS), help="Only this engine's presets.")
@click.option("--model", help="Only this model's presets.")
@click.option("--delete", metavar="NAME", help="Delete the preset NAME of --engine and --model.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def presets(
    ctx: click.Context, engine: str | None, model: str | None, delete: str | None, as_json: bool
) -> None:
    """List presets saved per model (save them with `engines start ... --save-preset NAME`)."""
    from roundhouse.cli.instances_view import presets_view
    from roundhouse.cli.main import show_from_daemon
    from roundhouse.cli.output import console, fail

    if delete is not None:
        if engine is None or model is None:
            fail("Say whose preset to delete: give --engine and --model.")

        async def remove() -> None:
            async with _client(ctx) as client:
                await client.delete_preset(engine, model, delete)

        _run(remove())
        console.print(f"Deleted the preset {delete!r} of {model}.", highlight=False)
        return
    show_from_daemon(ctx, as_json, lambda c: c.presets(engine, model), presets_view)


INSTALLABLE = ("llama.cpp", "mlx", "vllm", "sglang", "ollama")


@engines.command()
@click.argument("engine", type=click.Choice(INSTALLABLE))
@click.option("--tag", help="llama.cpp: a release tag such as b6500 (default: the latest).")
@click.option(
    "--backend",
    type=click.Choice(["cpu", "metal", "cuda", "vulkan", "rocm"]),
    help="llama.cpp: the GPU API to use instead of the one chosen for this machine.",
)
@click.option("--python", help="mlx/vllm/sglang: the Python to make the environment from.")
@click.option("--no-wait", is_flag=True, help="Start the install and return its job id.")
@click.option("--json", "as_json", is_flag=True, help="Print the finished job as JSON.")
@click.pass_context
def install(
    ctx: click.Context,
    engine: str,
    tag: str | None,
    backend: str | None,
    python: str | None,
    no_wait: bool,
    as_json: bool,
) -> None:
    """Install an engine: llama.cpp's official build for this machine (checked against its
    checksum), or mlx-lm, vLLM or SGLang in a virtual environment of their own."""
    import asyncio

    from roundhouse.api.installs import Backend, InstallRequest, JobState
    from roundhouse.cli.output import console, err_console, fail, print_json

    if engine == "ollama":
        fail(
            "Roundhouse does not install Ollama: get it from https://ollama.com/download "
            "(macOS and Windows apps, or the Linux script); Roundhouse then finds it."
        )
    request = InstallRequest(tag=tag, backend=Backend(backend) if backend else None, python=python)

    async def main() -> InstallJob:
        async with _client(ctx) as client:
            job: InstallJob = await client.install_engine(engine, request)
            if no_wait:
                return job
            try:
                return await _follow_install(client, job, quiet=as_json)
            except (KeyboardInterrupt, asyncio.CancelledError):
                await client.cancel_install(job.id)
                raise

    job = _run(main())
    if as_json:
        print_json(job)
    elif no_wait:
        console.print(f"Installing {engine}: job {job.id}.", highlight=False)
    if job.state == JobState.FAILED:
        if job.lines and not as_json:
            err_console.print("Last output lines:", highlight=False)
            for line in job.lines[-15:]:
                err_console.print(f"  {line}", highlight=False, markup=False)
        fail(job.error or "The install failed.")
    if job.state == JobState.DONE and not as_json:
        if job.build is not None:
            console.print(
                f"Installed llama.cpp {job.build.tag} in {job.build.path}"
                + (" (current)" if job.build.current else ""),
                highlight=False,
            )
        elif job.venv is not None:
            console.print(
                f"Installed {job.venv.package} {job.venv.version or ''} in {job.venv.venv_dir}",
                highlight=False,
            )


async def _follow_install(client: DaemonClient, started: InstallJob, *, quiet: bool) -> InstallJob:
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    from roundhouse.api.installs import JobState
    from roundhouse.cli.output import console

    job = started
    if quiet:
        async for job in client.follow_install(started.id):  # noqa: B007 - the last one counts
            pass
        return job
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
    )
    shown_plan = False
    printed = 0
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(f"{started.engine.value}: starting", total=None)
        async for job in client.follow_install(started.id):
            if job.plan and not shown_plan:
                bar.console.print(f"Chosen: {job.plan}", highlight=False)
                shown_plan = True
            # pip's output as it comes; lines the job no longer keeps are skipped.
            fresh = min(job.line_count - printed, len(job.lines))
            for line in job.lines[len(job.lines) - fresh :]:
                bar.console.print(f"  {line}", highlight=False, markup=False)
            printed = job.line_count
            event = job.progress
            if event is not None:
                bar.update(
                    task,
                    description=f"{job.engine.value}: {event.message}"[:70],
                    completed=event.done_bytes or 0,
                    total=event.total_bytes,
                )
            if job.state != JobState.RUNNING:
                break
    return job


@engines.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def builds(ctx: click.Context, as_json: bool) -> None:
    """List the llama.cpp builds Roundhouse installed, and which one is current."""
    from roundhouse.cli.instances_view import builds_view
    from roundhouse.cli.main import show_from_daemon

    show_from_daemon(ctx, as_json, lambda c: c.llamacpp_builds(), builds_view)


@engines.command()
@click.argument("tag")
@click.pass_context
def use(ctx: click.Context, tag: str) -> None:
    """Make an installed llama.cpp build the one new instances start with."""
    from roundhouse.cli.output import console

    async def main() -> Any:
        async with _client(ctx) as client:
            return await client.switch_llamacpp_build(tag)

    build = _run(main())
    console.print(f"llama.cpp {build.tag} is current ({build.executable}).", highlight=False)


@engines.command()
@click.argument("engine", type=click.Choice(("llama.cpp", "mlx", "vllm", "sglang")))
@click.argument("tag", required=False)
@click.option("--force", is_flag=True, help="llama.cpp: also remove the current build.")
@click.pass_context
def remove(ctx: click.Context, engine: str, tag: str | None, force: bool) -> None:
    """Remove a llama.cpp build (by TAG), or the environment made for mlx, vllm or sglang."""
    from roundhouse.cli.output import console, fail

    if engine == "llama.cpp" and not tag:
        fail("Say which build: `roundhouse engines remove llama.cpp TAG` (see `engines builds`).")

    async def main() -> str:
        async with _client(ctx) as client:
            if engine == "llama.cpp":
                assert tag is not None
                left = await client.remove_llamacpp_build(tag, force=force)
                return f"Removed llama.cpp {tag}; current: {left.current or 'none'}."
            await client.remove_engine_venv(engine)
            return f"Removed the environment of {engine}."

    console.print(_run(main()), highlight=False)
