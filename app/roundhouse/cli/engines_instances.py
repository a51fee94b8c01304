"""`roundhouse engines stop|attach|allow-presets|metrics|memory|logs|presets`: work with running
instances."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import click

from roundhouse.cli.daemon_link import daemon_client, run_async, show_from_daemon
from roundhouse.cli.engines_common import ENGINE_IDS, resolve_id

if TYPE_CHECKING:
    from roundhouse.api.instances import InstanceInfo
    from roundhouse.client import DaemonClient


@click.command()
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
        async with daemon_client(ctx) as client:
            if stop_all:
                listed = (await client.instances()).instances
                ids = [i.id for i in listed if i.origin != InstanceOrigin.EXTERNAL]
            else:
                ids = [await resolve_id(client, wanted) for wanted in instance_ids]
            return [await client.stop_instance(i, force=force) for i in ids]

    stopped = run_async(main())
    if as_json:
        print_json([i.model_dump(mode="json") for i in stopped])
        return
    if not stopped:
        console.print("No instance was running.")
    for info in stopped:
        how = f": {info.last_exit.message}" if info.last_exit else ""
        console.print(f"Stopped {info.id} ({info.engine.value}){how}.", highlight=False)


@click.command()
@click.argument("url")
@click.option("--name", help="A name to show for it (default: the URL).")
@click.option("--ask-key", is_flag=True, help="Ask for an API key (hidden); kept in the keyring.")
@click.option("--api-key-stdin", is_flag=True, help="Read the API key from standard input.")
@click.option(
    "--may-serve-presets",
    is_flag=True,
    help="Let the gateway send it requests for models that your presets start.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the endpoint as JSON.")
@click.pass_context
def attach(
    ctx: click.Context,
    url: str,
    name: str | None,
    ask_key: bool,
    api_key_stdin: bool,
    may_serve_presets: bool,
    as_json: bool,
) -> None:
    """Attach to an OpenAI-compatible server Roundhouse does not run (LM Studio, Jan,
    LocalAI, exo's cluster on port 52415, another machine). `roundhouse engines stop ID`
    detaches it again.

    The gateway sends it requests for the models it lists, except those a saved preset
    starts, unless --may-serve-presets (or `engines allow-presets ID` later)."""
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
        async with daemon_client(ctx) as client:
            request = AddEndpointRequest(
                url=url, api_key=key, name=name, may_serve_presets=may_serve_presets
            )
            return await client.add_endpoint(request)

    info = run_async(main())
    if as_json:
        print_json(info)
        return
    served = ", ".join(info.models) or "no model listed"
    # exo lists every model card it knows; it serves only those placed on its cluster.
    what = f"exo at {info.base_url}" if info.engine.value == "exo" else info.base_url
    if info.engine.value == "exo" and not info.models:
        served = "no model yet: place one in exo's dashboard"
    console.print(f"Attached {info.id}: {what} serves {served}.", highlight=False)
    print_warnings(info)


@click.command("allow-presets")
@click.argument("instance_id")
@click.option("--off", is_flag=True, help="Stop letting it serve them.")
@click.option("--json", "as_json", is_flag=True, help="Print the instance as JSON.")
@click.pass_context
def allow_presets(ctx: click.Context, instance_id: str, off: bool, as_json: bool) -> None:
    """Let an engine Roundhouse did not start serve the models your presets start.

    Until then the gateway starts a preset's model itself, even when an engine found running
    or attached lists the same name: another program must not take those requests unasked.
    Remembered for that engine at that address; --off takes it back."""
    from roundhouse.cli.output import console, print_json

    async def main() -> InstanceInfo:
        async with daemon_client(ctx) as client:
            return await client.allow_presets(await resolve_id(client, instance_id), not off)

    info = run_async(main())
    if as_json:
        print_json(info)
        return
    where = f"{info.engine.value} at {info.url}"
    if info.may_serve_presets:
        console.print(f"{where} may now serve the models your presets start.", highlight=False)
    else:
        console.print(
            f"{where} no longer serves the models your presets start: the gateway starts "
            "them itself.",
            highlight=False,
        )


def print_warnings(info: InstanceInfo) -> None:
    """The daemon's warnings about an instance, on standard error, each on its own line."""
    from roundhouse.cli.output import err_console

    for warning in info.warnings:
        err_console.print(f"[yellow]Warning:[/] {warning}", highlight=False)


@click.command()
@click.argument("instance_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def metrics(ctx: click.Context, instance_id: str, as_json: bool) -> None:
    """Print an instance's own metrics (llama.cpp, vLLM, SGLang): tokens, requests."""
    from roundhouse.cli.instances_view import metrics_view

    async def fetch(client: DaemonClient) -> Any:
        return await client.instance_metrics(await resolve_id(client, instance_id))

    show_from_daemon(ctx, as_json, fetch, metrics_view)


@click.command()
@click.argument("instance_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the instance's `memory`).")
@click.pass_context
def memory(ctx: click.Context, instance_id: str, as_json: bool) -> None:
    """Show what an instance's engine allocated per device beside the fit estimate."""
    from roundhouse.cli.memory_view import memory_view
    from roundhouse.cli.output import console, print_json

    async def main() -> InstanceInfo:
        async with daemon_client(ctx) as client:
            return await client.instance(await resolve_id(client, instance_id))

    info = run_async(main())
    if not as_json:
        console.print(memory_view(info))
    elif info.memory is None:
        click.echo("null")
    else:
        print_json(info.memory)


@click.command()
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

        async with daemon_client(ctx) as client:
            resolved = await resolve_id(client, instance_id)
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
        run_async(main())


@click.command()
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
    from roundhouse.cli.output import console, fail

    if delete is not None:
        if engine is None or model is None:
            fail("Say whose preset to delete: give --engine and --model.")

        async def remove() -> None:
            async with daemon_client(ctx) as client:
                await client.delete_preset(engine, model, delete)

        run_async(remove())
        console.print(f"Deleted the preset {delete!r} of {model}.", highlight=False)
        return
    show_from_daemon(ctx, as_json, lambda c: c.presets(engine, model), presets_view)
