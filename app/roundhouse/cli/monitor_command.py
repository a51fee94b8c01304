"""`roundhouse monitor`: per-instance tokens/s, latency, CPU, memory and the two flags."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from roundhouse.cli.daemon_link import show_from_daemon


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the current figures as JSON.")
@click.option(
    "--csv",
    "csv_file",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write the history of the window to this CSV file.",
)
@click.option("--window", default="5m", show_default=True, help="History to export: 90s, 5m, 1h.")
@click.option("--follow", "-f", is_flag=True, help="Keep the table updating until Ctrl+C.")
@click.pass_context
def monitor(
    ctx: click.Context, as_json: bool, csv_file: Path | None, window: str, follow: bool
) -> None:
    """Show what each instance does now: tokens per second through the gateway, requests
    running and queued, time to first token, CPU, memory, GPU memory and KV cache."""
    from roundhouse.cli.daemon_link import daemon_client, run_async
    from roundhouse.cli.monitor_view import monitor_view, parse_window
    from roundhouse.cli.output import console, fail

    try:
        window_s = parse_window(window)
    except ValueError as exc:
        fail(str(exc))
    if csv_file is not None:

        async def export() -> str:
            async with daemon_client(ctx) as client:
                return await client.metrics_csv(window_s)

        text = run_async(export())
        try:
            csv_file.write_text(text, encoding="utf-8")
        except OSError as exc:
            fail(f"Could not write {csv_file}: {exc.strerror or exc}.")
        rows = max(0, text.count("\n") - 1)
        console.print(f"Wrote {rows} rows ({window} of history) to {csv_file}.")
        return
    if not follow:
        show_from_daemon(ctx, as_json, lambda c: c.metrics(), monitor_view)
        return

    from rich.live import Live

    async def live() -> None:
        async with daemon_client(ctx) as client:
            with Live(console=console, auto_refresh=False) as view:
                async for snapshot in client.stream_metrics():
                    view.update(monitor_view(snapshot), refresh=True)

    with contextlib.suppress(KeyboardInterrupt):
        run_async(live())
