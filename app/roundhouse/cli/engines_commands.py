"""`roundhouse engines ...`: list engines, start, watch, stop and read the logs of instances."""

from __future__ import annotations

import click

from roundhouse.cli.daemon_link import show_from_daemon
from roundhouse.cli.engines_across import across
from roundhouse.cli.engines_install import builds, install, remove, use
from roundhouse.cli.engines_instances import (
    allow_presets,
    attach,
    logs,
    memory,
    metrics,
    presets,
    stop,
)
from roundhouse.cli.engines_rpc import rpc_server
from roundhouse.cli.engines_start import restart, start


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

    show_from_daemon(ctx, as_json, lambda c: c.engines(refresh=refresh), engines_view)


@engines.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def ps(ctx: click.Context, as_json: bool) -> None:
    """List running instances: id, engine, model, status, address, uptime, memory, origin.

    Engines Roundhouse did not start are marked unprotected, with what to do below."""
    from roundhouse.cli.instances_view import instances_view

    show_from_daemon(ctx, as_json, lambda c: c.instances(), instances_view)


@engines.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def scan(ctx: click.Context, as_json: bool) -> None:
    """Look for engines already running (Ollama, llama-server, vLLM, SGLang, mlx_lm) and
    list every instance with them.

    Only engines that run as you and listen on loopback only are used; the others are named
    below the table with why."""
    from roundhouse.cli.instances_view import instances_view

    show_from_daemon(ctx, as_json, lambda c: c.scan_instances(), instances_view)


for _command in (
    start,
    restart,
    across,
    stop,
    attach,
    allow_presets,
    metrics,
    memory,
    logs,
    presets,
    install,
    builds,
    use,
    remove,
    rpc_server,
):
    engines.add_command(_command)
