"""Entry point of the `roundhouse` command: the app, the daemon and its client commands."""

from __future__ import annotations

from pathlib import Path

import click

from roundhouse import __version__
from roundhouse.base.paths import HOME_ENV, resolve_home
from roundhouse.cli.daemon_link import home_of, run_async, show_from_daemon

# Only click and the paths load at start: `roundhouse` opening the app must paint its window
# fast, so asyncio, the client (httpx, pydantic) and rich load in the commands that use them.


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    envvar=HOME_ENV,
    help="Keep config, data, logs and the daemon's files under this folder.",
)
@click.option(
    "--tray",
    is_flag=True,
    help="Open the app in the tray, its window closed (what Start at login runs).",
)
@click.version_option(__version__, prog_name="roundhouse")
@click.pass_context
def cli(ctx: click.Context, home: Path | None, tray: bool) -> None:
    """Roundhouse runs large language models on your own machine.

    With no command, it opens the desktop app.
    """
    ctx.obj = resolve_home(home)
    if ctx.invoked_subcommand is None:
        from roundhouse.cli.gui_command import open_app

        raise SystemExit(open_app(ctx.obj, tray=tray))


@cli.command()
@click.option("--port", type=click.IntRange(0, 65535), help="Port to listen on (0: any free).")
@click.option("--host", help="Address to bind (default 127.0.0.1).")
@click.pass_context
def serve(ctx: click.Context, port: int | None, host: str | None) -> None:
    """Run the daemon in the foreground until Ctrl+C or `roundhouse stop`."""
    from roundhouse.cli.serve_command import serve_foreground

    serve_foreground(home_of(ctx), host=host, port=port)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Say whether the daemon runs, with its pid, url, version and uptime."""
    from roundhouse.base.units import format_duration
    from roundhouse.cli.output import console, print_json
    from roundhouse.client.lifecycle import probe_status

    result = run_async(probe_status(home_of(ctx)))
    if as_json:
        print_json(result)
    elif result.running:
        console.print(
            f"[green]Running[/]: pid {result.pid} at {result.url}, version {result.version}, "
            f"up {format_duration(result.uptime_s)}",
            highlight=False,
        )
    else:
        console.print(
            f"[yellow]Not running[/]: {result.message} Start it with `roundhouse serve`.",
            highlight=False,
        )
    raise SystemExit(0 if result.running else 3)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def stop(ctx: click.Context, as_json: bool) -> None:
    """Stop the daemon of this home and wait until it has exited."""
    from roundhouse.cli.output import console, print_json
    from roundhouse.client.lifecycle import stop_daemon

    last = run_async(stop_daemon(home_of(ctx)))
    if as_json:
        print_json({"stopped": True, "pid": last.pid})
    else:
        console.print(f"Stopped the daemon (pid {last.pid}).", highlight=False)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--refresh", is_flag=True, help="Look at the hardware again instead of the cache.")
@click.pass_context
def hw(ctx: click.Context, as_json: bool, refresh: bool) -> None:
    """List the CPU, RAM, GPUs and the engines that suit this machine."""
    from roundhouse.cli.hardware_view import inventory_view

    show_from_daemon(ctx, as_json, lambda c: c.hardware(refresh=refresh), inventory_view)


# After `cli` on purpose: the groups only import click at load.
from roundhouse.cli.bench_commands import bench  # noqa: E402
from roundhouse.cli.chat_command import chat, chats  # noqa: E402
from roundhouse.cli.compare_command import compare  # noqa: E402
from roundhouse.cli.engines_commands import engines  # noqa: E402
from roundhouse.cli.events_command import events  # noqa: E402
from roundhouse.cli.gateway_admin_commands import key as gateway_key  # noqa: E402
from roundhouse.cli.gateway_admin_commands import ollama_port as gateway_ollama_port  # noqa: E402
from roundhouse.cli.gateway_admin_commands import status as gateway_status  # noqa: E402
from roundhouse.cli.gateway_alias_commands import alias as gateway_alias  # noqa: E402
from roundhouse.cli.gateway_alias_commands import default as gateway_default  # noqa: E402
from roundhouse.cli.gateway_commands import gateway  # noqa: E402
from roundhouse.cli.launch_command import launch  # noqa: E402
from roundhouse.cli.models_commands import models  # noqa: E402
from roundhouse.cli.monitor_command import monitor  # noqa: E402
from roundhouse.cli.ollama_commands import ollama  # noqa: E402
from roundhouse.cli.peers_commands import peers  # noqa: E402
from roundhouse.cli.quick_chat_command import quick_chat  # noqa: E402
from roundhouse.cli.run_command import run  # noqa: E402
from roundhouse.cli.settings_commands import settings  # noqa: E402
from roundhouse.cli.setup_command import setup  # noqa: E402
from roundhouse.cli.update_commands import update  # noqa: E402

cli.add_command(bench)
cli.add_command(chat)
cli.add_command(chats)
cli.add_command(compare)
cli.add_command(engines)
cli.add_command(events)
cli.add_command(gateway)
gateway.add_command(gateway_status)
gateway.add_command(gateway_key)
gateway.add_command(gateway_alias)
gateway.add_command(gateway_default)
gateway.add_command(gateway_ollama_port)
cli.add_command(launch)
cli.add_command(models)
cli.add_command(monitor)
cli.add_command(run)
cli.add_command(ollama)
cli.add_command(peers)
cli.add_command(quick_chat)
cli.add_command(settings)
cli.add_command(setup)
cli.add_command(update)
