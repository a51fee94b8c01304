"""`roundhouse run MODEL`: make sure an instance serves the model, then say how to reach it."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import click

from roundhouse.base.paths import Home

if TYPE_CHECKING:
    from roundhouse.api.instances import InstanceInfo
    from roundhouse.client import DaemonClient

# How often the spinner's words are refreshed while the model loads.
POLL_S = 0.5


@click.command()
@click.argument("model")
@click.option("--json", "as_json", is_flag=True, help="Print the base URL and instance as JSON.")
@click.pass_context
def run(ctx: click.Context, model: str, as_json: bool) -> None:
    """Serve MODEL through the gateway, starting it if nothing serves it yet (with its saved
    preset, else with settings the fit estimate chooses for this machine); print the OpenAI
    base URL, the instance, the settings chosen and an example request.

    MODEL is a name from `roundhouse gateway models` or `roundhouse models ls`: a model's
    id, an alias, a GGUF file name (with or without .gguf) or its path, a repo id or an
    Ollama tag.
    """
    from roundhouse.cli.daemon_link import home_of, run_async
    from roundhouse.cli.gateway_view import served_view
    from roundhouse.cli.output import console, print_json

    base_url, info = run_async(_serve(home_of(ctx), model, quiet=as_json))
    if as_json:
        print_json({"model": model, "base_url": base_url, "instance": info.model_dump(mode="json")})
    else:
        console.print(served_view(model, base_url, info), highlight=False, soft_wrap=True)


def serve_now(home: Home, model: str) -> InstanceInfo:
    """Serve `model` as `run` does, a spinner on stderr while it loads (for `launch`)."""
    from roundhouse.cli.daemon_link import run_async

    return run_async(_serve(home, model, quiet=False))[1]


async def _serve(home: Home, model: str, *, quiet: bool) -> tuple[str, InstanceInfo]:
    import asyncio

    from roundhouse.cli.output import err_console
    from roundhouse.client import DaemonClient

    async with DaemonClient.for_home(home) as client:
        base_url = client.base_url + "/v1"
        serving = asyncio.create_task(client.serve_model(model))
        try:
            if quiet:
                return base_url, await serving
            with err_console.status(f"Serving {model}…") as status:
                while True:
                    done, _ = await asyncio.wait({serving}, timeout=POLL_S)
                    if done:
                        return base_url, serving.result()
                    words = await _progress(client, model)
                    if words:
                        status.update(words)
        finally:
            # Ctrl+C leaves the daemon loading the model: the next run finds it.
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await serving


async def _progress(client: DaemonClient, model: str) -> str | None:
    """The loading instance's status in words, when the listing shows one for `model`."""
    from roundhouse.client import ClientError

    try:
        listed = await client.gateway_models()
        entry = next((m for m in listed.models if model in (m.id, m.model)), None)
        if entry is None or entry.instance is None:
            return f"Starting {model}…" if entry is not None else None
        info = await client.instance(entry.instance)
    except ClientError:
        return None
    waited = f" {info.waited_s:.0f} s" if info.waited_s is not None else ""
    probe = f" ({info.probe_status})" if info.probe_status else ""
    return f"{model}: {info.engine.value} {info.status.value}{waited}{probe}"
