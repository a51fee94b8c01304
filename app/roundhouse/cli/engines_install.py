"""`roundhouse engines install|builds|use|remove`: install engines and manage llama.cpp builds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from roundhouse.cli.daemon_link import daemon_client, run_async, show_from_daemon

if TYPE_CHECKING:
    from roundhouse.api.installs import InstallJob
    from roundhouse.client import DaemonClient

# Ollama and exo are refused by the daemon in words: their own installers set them up.
INSTALLABLE = ("llama.cpp", "mlx", "vllm", "sglang", "ollama", "exo")


@click.command()
@click.argument("engine", type=click.Choice(INSTALLABLE))
@click.option("--tag", help="llama.cpp: a release tag such as b6500 (default: the latest).")
@click.option(
    "--backend",
    type=click.Choice(["cpu", "metal", "cuda", "vulkan", "rocm"]),
    help="llama.cpp: the GPU API to use instead of the one chosen for this machine.",
)
@click.option("--python", help="mlx/vllm/sglang: the Python to make the environment from.")
@click.option(
    "--version",
    "engine_version",
    metavar="VERSION",
    help="mlx/vllm/sglang: a version other than the one this release pins (needs --unverified).",
)
@click.option(
    "--unverified",
    is_flag=True,
    help=(
        "Allow what cannot be checked: mlx/vllm/sglang another version than the pinned one "
        "(the newest without --version), installed without hash checks; llama.cpp a release "
        "asset without a sha256 digest."
    ),
)
@click.option("--no-wait", is_flag=True, help="Start the install and return its job id.")
@click.option("--json", "as_json", is_flag=True, help="Print the finished job as JSON.")
@click.pass_context
def install(
    ctx: click.Context,
    engine: str,
    tag: str | None,
    backend: str | None,
    python: str | None,
    engine_version: str | None,
    unverified: bool,
    no_wait: bool,
    as_json: bool,
) -> None:
    """Install an engine: llama.cpp's official build for this machine (checked against its
    checksum), or mlx-lm, vLLM or SGLang in a virtual environment of their own, at the
    versions this release pins (every file checked against its pinned sha256)."""
    import asyncio

    from roundhouse.api.installs import Backend, InstallRequest, JobState
    from roundhouse.cli.output import console, err_console, fail, print_json

    if engine == "ollama":
        fail(
            "Roundhouse does not install Ollama: get it from https://ollama.com/download "
            "(macOS and Windows apps, or the Linux script); Roundhouse then finds it."
        )
    request = InstallRequest(
        tag=tag,
        backend=Backend(backend) if backend else None,
        python=python,
        version=engine_version,
        unverified=unverified,
    )

    async def main() -> InstallJob:
        async with daemon_client(ctx) as client:
            job: InstallJob = await client.install_engine(engine, request)
            if no_wait:
                return job
            try:
                return await follow_install(client, job, quiet=as_json)
            except (KeyboardInterrupt, asyncio.CancelledError):
                await client.cancel_install(job.id)
                raise

    job = run_async(main())
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


async def follow_install(client: DaemonClient, started: InstallJob, *, quiet: bool) -> InstallJob:
    """Show an install job's progress and output until it ends; return the last state."""
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


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def builds(ctx: click.Context, as_json: bool) -> None:
    """List the llama.cpp builds Roundhouse installed, and which one is current."""
    from roundhouse.cli.instances_view import builds_view

    show_from_daemon(ctx, as_json, lambda c: c.llamacpp_builds(), builds_view)


@click.command()
@click.argument("tag")
@click.pass_context
def use(ctx: click.Context, tag: str) -> None:
    """Make an installed llama.cpp build the one new instances start with."""
    from roundhouse.cli.output import console

    async def main() -> Any:
        async with daemon_client(ctx) as client:
            return await client.switch_llamacpp_build(tag)

    build = run_async(main())
    console.print(f"llama.cpp {build.tag} is current ({build.executable}).", highlight=False)


@click.command()
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
        async with daemon_client(ctx) as client:
            if engine == "llama.cpp":
                assert tag is not None
                left = await client.remove_llamacpp_build(tag, force=force)
                return f"Removed llama.cpp {tag}; current: {left.current or 'none'}."
            await client.remove_engine_venv(engine)
            return f"Removed the environment of {engine}."

    console.print(run_async(main()), highlight=False)
