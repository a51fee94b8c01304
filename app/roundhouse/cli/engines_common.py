"""What the `roundhouse engines ...` commands share: engine ids, the daemon client, instance ids."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from roundhouse.client import DaemonClient

ENGINE_IDS = ("llama.cpp", "ollama", "mlx", "vllm", "sglang")


def _home(ctx: click.Context) -> Any:
    from roundhouse.cli.main import home_of

    return home_of(ctx)


def run_client(coro: Any) -> Any:
    """Run a client coroutine as `roundhouse.cli.main.run_async` does (imported late: no cycle)."""
    from roundhouse.cli.main import run_async

    return run_async(coro)


def daemon_client(ctx: click.Context) -> DaemonClient:
    from roundhouse.client import DaemonClient

    return DaemonClient.for_home(_home(ctx))


async def resolve_id(client: DaemonClient, wanted: str) -> str:
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
