"""`roundhouse gateway alias add|rm|ls` and `gateway default`: names clients may send.

An alias is another name for a model (`claude-sonnet-4-5` → `qwen3-coder-30b`); the default
model serves a request that names a model nothing lists. Both are gateway settings, saved
by the daemon, which checks them (no alias of an alias, none with a served model's id)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from roundhouse.api.settings import GatewaySettings, Settings


def _change(ctx: click.Context, edit: Callable[[GatewaySettings], GatewaySettings]) -> Settings:
    """Read the settings, change the gateway's, save them; the daemon refuses in words."""
    from roundhouse.cli.daemon_link import daemon_client, run_async

    async def change() -> Settings:
        async with daemon_client(ctx) as client:
            current = await client.settings()
            new = current.model_copy(update={"gateway": edit(current.gateway)})
            return await client.put_settings(new)

    return run_async(change())


def _aliases_view(aliases: dict[str, str], default: str | None) -> str:
    lines = [f"{name} → {target}" for name, target in sorted(aliases.items())]
    if not lines:
        lines.append("No aliases: `roundhouse gateway alias add NAME MODEL` adds one.")
    lines.append(
        f"A name nothing lists is served by {default}."
        if default
        else "No default model: a name nothing lists gets 404."
    )
    return "\n".join(lines)


@click.group()
def alias() -> None:
    """Other names for models, e.g. the names a client asks for by default."""


@alias.command("add")
@click.argument("name")
@click.argument("target")
@click.pass_context
def add(ctx: click.Context, name: str, target: str) -> None:
    """Serve requests for NAME with TARGET (a model id from `roundhouse gateway models`)."""
    from roundhouse.cli.output import console

    saved = _change(
        ctx, lambda g: g.model_copy(update={"aliases": {**g.aliases, name.strip(): target}})
    )
    now = saved.gateway.aliases.get(name.strip(), target)
    console.print(f"{name.strip()} → {now}", highlight=False)


@alias.command("rm")
@click.argument("name")
@click.pass_context
def rm(ctx: click.Context, name: str) -> None:
    """Remove the alias NAME."""
    from roundhouse.cli.daemon_link import daemon_client, run_async
    from roundhouse.cli.output import console, fail

    async def aliases() -> dict[str, str]:
        async with daemon_client(ctx) as client:
            return (await client.settings()).gateway.aliases

    known = run_async(aliases())
    if name not in known:
        listed = ", ".join(sorted(known)) or "none"
        fail(f"There is no alias {name!r} (aliases: {listed}).", code=2)
    _change(
        ctx,
        lambda g: g.model_copy(
            update={"aliases": {k: v for k, v in g.aliases.items() if k != name}}
        ),
    )
    console.print(f"Removed the alias {name}.", highlight=False)


@alias.command("ls")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def ls(ctx: click.Context, as_json: bool) -> None:
    """List the aliases and the default model."""
    from roundhouse.cli.daemon_link import daemon_client, run_async
    from roundhouse.cli.output import console, print_json

    async def read() -> Settings:
        async with daemon_client(ctx) as client:
            return await client.settings()

    gateway = run_async(read()).gateway
    if as_json:
        print_json({"aliases": gateway.aliases, "default_model": gateway.default_model})
    else:
        console.print(_aliases_view(gateway.aliases, gateway.default_model), highlight=False)


@click.command("default")
@click.argument("model", required=False)
@click.option("--clear", is_flag=True, help="No default: a name nothing lists gets 404.")
@click.pass_context
def default(ctx: click.Context, model: str | None, clear: bool) -> None:
    """Serve a request naming a model nothing lists with MODEL (or, with --clear, refuse
    it); without either, say which model that is."""
    from roundhouse.cli.output import console, fail

    if clear and model:
        fail("Give a MODEL or --clear, not both.", code=2)
    if not clear and not model:
        from roundhouse.cli.daemon_link import daemon_client, run_async

        async def read() -> str | None:
            async with daemon_client(ctx) as client:
                return (await client.settings()).gateway.default_model

        current = run_async(read())
        console.print(current or "No default model.", highlight=False)
        return
    saved = _change(ctx, lambda g: g.model_copy(update={"default_model": None if clear else model}))
    now = saved.gateway.default_model
    console.print(
        f"A name nothing lists is served by {now}." if now else "No default model.",
        highlight=False,
    )
