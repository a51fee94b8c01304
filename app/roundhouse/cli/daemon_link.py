"""How a command reaches the daemon: the home in use, its client, errors in one line, and
one answer shown as JSON or drawn."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import click

from roundhouse.base.paths import Home

# Only click and the paths load here: asyncio, the client and rich load when a command runs.
if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.console import RenderableType

    from roundhouse.client import DaemonClient

T = TypeVar("T")


def home_of(ctx: click.Context) -> Home:
    home: Home = ctx.obj
    return home


def daemon_client(ctx: click.Context) -> DaemonClient:
    """A client of the daemon of the home this command runs in."""
    from roundhouse.client import DaemonClient

    return DaemonClient.for_home(home_of(ctx))


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run a client coroutine; client errors become one readable line and exit code 1."""
    import asyncio

    from roundhouse.cli.output import fail
    from roundhouse.client import ClientError, DaemonNotRunningError

    try:
        return asyncio.run(coro)
    except DaemonNotRunningError as exc:
        fail(f"{exc} Start it with `roundhouse serve`, or open the app with `roundhouse`.")
    except ClientError as exc:
        fail(str(exc))


def show_from_daemon(
    ctx: click.Context,
    as_json: bool,
    fetch: Callable[[DaemonClient], Awaitable[BaseModel]],
    render: Callable[[Any], RenderableType],
) -> None:
    """Fetch one answer from the daemon and print it as JSON or as `render` draws it."""
    from roundhouse.cli.output import console, print_json

    async def ask() -> BaseModel:
        async with daemon_client(ctx) as client:
            return await fetch(client)

    answer = run_async(ask())
    if as_json:
        print_json(answer)
    else:
        console.print(render(answer))
