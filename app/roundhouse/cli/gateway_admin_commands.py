"""`roundhouse gateway status|key|ollama-port`: where the gateway listens, and its API key."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from roundhouse.cli.daemon_link import show_from_daemon

if TYPE_CHECKING:
    from rich.console import RenderableType

    from roundhouse.api.gateway import GatewayKey, GatewayStatus


def status_view(status: GatewayStatus) -> RenderableType:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    listeners = Table(title="Gateway", title_justify="left", show_edge=False)
    listeners.add_column("Address")
    listeners.add_column("Key")
    listeners.add_column("State")
    for listener in status.listeners:
        state = Text(listener.error, style="red") if listener.error else Text("listening", "green")
        listeners.add_row(listener.url, "required" if listener.needs_key else "none", state)
    key = (
        f"API key: set (kept in {status.key_kept_in}; `roundhouse launch AGENT --print "
        "--show-key` or the app's Use with… show it)."
        if status.key_set
        else "API key: none. Set one with `roundhouse gateway key --generate`."
    )
    parts: list[RenderableType] = [listeners, Text(key)]
    if status.usage:
        from roundhouse.api.gateway import GatewayUsage
        from roundhouse.cli.gateway_view import usage_view

        parts.append(usage_view(GatewayUsage(usage=status.usage)))
    return Group(*parts)


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Show where the gateway listens (or why not), whether a key is set, and its use."""

    show_from_daemon(ctx, as_json, lambda c: c.gateway_status(), status_view)


def _read_key() -> str:
    """Hidden at a terminal (asked twice); one line from stdin in a script."""
    if sys.stdin.isatty():
        entered: str = click.prompt(
            "Gateway API key", hide_input=True, confirmation_prompt="Repeat the key"
        )
        return entered
    return sys.stdin.readline().strip()


def _print_new_key(answer: GatewayKey, generated: bool) -> None:
    from roundhouse.cli.output import console

    console.print(
        f"{'Generated' if generated else 'Set'} the gateway API key. "
        f"It is kept in {answer.kept_in} (the app's Use with… shows it again):",
        highlight=False,
    )
    if generated:
        # Plain stdout, no markup: the key is meant to be copied or piped.
        sys.stdout.write(answer.key + "\n")
        sys.stdout.flush()
    console.print(
        "Clients send it as `Authorization: Bearer <key>` (OpenAI clients: api_key=<key>). "
        "It is needed on every request to the second address (gateway.listen_host) and on "
        "/v1 of the daemon's own address. See `roundhouse gateway status`.",
        highlight=False,
    )


@click.command("key")
@click.option("--generate", "action", flag_value="generate", help="Make a new random key.")
@click.option("--set", "action", flag_value="set", help="Set your own key (asked, hidden).")
@click.option("--clear", "action", flag_value="clear", help="Remove the key.")
@click.pass_context
def key(ctx: click.Context, action: str | None) -> None:
    """Generate, set or clear the gateway's API key (kept in the OS keyring).

    On a machine with no keyring (a headless server) the daemon keeps it in a file only you
    can read, in its config folder; ROUNDHOUSE_SECRETS=file or =keyring (in the daemon's
    environment) chooses. Without a key, /v1 answers anyone on this machine and the gateway
    does not listen beyond loopback. `--set` reads one line from stdin when it is not a terminal.
    """
    from roundhouse.cli.daemon_link import daemon_client, run_async
    from roundhouse.cli.output import console, fail

    if action is None:
        fail("Say what to do: --generate, --set or --clear.", code=2)

    given = _read_key() if action == "set" else None
    if action == "set" and not given:
        fail("No key was given; nothing changed.", code=2)

    async def change() -> Any:
        async with daemon_client(ctx) as client:
            if action == "clear":
                return await client.clear_gateway_key()
            if given is not None:
                return await client.set_gateway_key(given)
            return await client.generate_gateway_key()

    answer = run_async(change())
    if action == "clear":
        console.print("Cleared the gateway API key.", highlight=False)
        for listener in answer.listeners:
            if listener.error:
                console.print(f"{listener.url}: {listener.error}", highlight=False)
        return
    _print_new_key(answer, generated=action == "generate")


@click.command("ollama-port")
@click.argument("state", required=False, type=click.Choice(["on", "off"]))
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    help="The port to take (Ollama's 11434 unless set otherwise).",
)
@click.pass_context
def ollama_port(ctx: click.Context, state: str | None, port: int | None) -> None:
    """Also serve the gateway on Ollama's address (127.0.0.1:11434), for apps that cannot
    be pointed elsewhere: `on`, `off`, or no argument to show its state. Refused, with the
    reason in its state, while Ollama itself runs there."""
    from roundhouse.cli.daemon_link import daemon_client, run_async
    from roundhouse.cli.output import console

    async def change() -> tuple[int, bool, GatewayStatus]:
        async with daemon_client(ctx) as client:
            current = await client.settings()
            gateway = current.gateway
            update: dict[str, Any] = {}
            if state is not None:
                update["ollama_port_enabled"] = state == "on"
            if port is not None:
                update["ollama_port"] = port
            if update:
                new = current.model_copy(update={"gateway": gateway.model_copy(update=update)})
                gateway = (await client.put_settings(new)).gateway
            return gateway.ollama_port, gateway.ollama_port_enabled, await client.gateway_status()

    number, enabled, status = run_async(change())
    url = f"http://127.0.0.1:{number}"
    if not enabled:
        console.print(
            f"Ollama's address ({url}): off. `roundhouse gateway ollama-port on` serves it.",
            highlight=False,
        )
        return
    listener = next((item for item in status.listeners if item.url == url), None)
    said = listener.error if listener and listener.error else "listening"
    console.print(f"Ollama's address ({url}): {said}", highlight=False)
