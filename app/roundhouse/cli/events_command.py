"""`roundhouse events`: the daemon's change feed, one line per event as it comes."""

from __future__ import annotations

import contextlib
import sys

import click


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print each event as one line of JSON.")
@click.option(
    "--since",
    type=click.IntRange(min=0),
    metavar="SEQ",
    help="Resume after the event with this number (the first on each line); without it, or "
    "when the daemon no longer keeps the events after it, a reset comes first.",
)
@click.pass_context
def events(ctx: click.Context, as_json: bool, since: int | None) -> None:
    """Print every change the daemon makes as it happens: instances, jobs, downloads, the
    gateway's models, settings, the library, the engines found and how many lines each
    engine wrote. Runs until Ctrl+C or the daemon stops."""
    from roundhouse.api.events import ResetEvent
    from roundhouse.cli.daemon_link import daemon_client, run_async
    from roundhouse.cli.events_view import EventLines
    from roundhouse.cli.output import console

    lines = EventLines()

    async def follow() -> None:
        async with daemon_client(ctx) as client:
            async for event in client.events(since):
                if as_json:
                    sys.stdout.write(event.model_dump_json() + "\n")
                    sys.stdout.flush()
                    continue
                if isinstance(event, ResetEvent):
                    # A reset asks for the state again: the settings, to say what a save changed.
                    lines.settings_now(await client.settings())
                console.print(lines.line(event), highlight=False, markup=False, soft_wrap=True)
        if not as_json:
            console.print("The daemon stopped.", highlight=False)

    with contextlib.suppress(KeyboardInterrupt):
        run_async(follow())
