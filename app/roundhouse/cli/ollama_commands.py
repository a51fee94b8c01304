"""`roundhouse ollama ...`: the models of the Ollama Roundhouse runs or attached to."""

from __future__ import annotations

import click

from roundhouse.cli.daemon_link import daemon_client, run_async, show_from_daemon

INSTANCE_HELP = "The Ollama instance (see `roundhouse engines ps`); default: the one serving."


@click.group()
def ollama() -> None:
    """Ollama's models: list, pull, show, delete, load, unload, and what is loaded."""


@ollama.command("list")
@click.option("--instance", help=INSTANCE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def list_models(ctx: click.Context, instance: str | None, as_json: bool) -> None:
    """List the models Ollama has on disk."""
    from roundhouse.cli.ollama_view import models_view

    show_from_daemon(ctx, as_json, lambda c: c.ollama_models(instance), models_view)


@ollama.command()
@click.option("--instance", help=INSTANCE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def ps(ctx: click.Context, instance: str | None, as_json: bool) -> None:
    """List the models loaded now, with how much of each is in GPU memory."""
    from roundhouse.cli.ollama_view import loaded_view

    show_from_daemon(ctx, as_json, lambda c: c.ollama_loaded(instance), loaded_view)


@ollama.command()
@click.argument("model")
@click.option("--instance", help=INSTANCE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def show(ctx: click.Context, model: str, instance: str | None, as_json: bool) -> None:
    """Show a model's details, parameters and model_info."""
    from roundhouse.cli.ollama_view import shown_view

    show_from_daemon(ctx, as_json, lambda c: c.ollama_show(model, instance), shown_view)


@ollama.command()
@click.argument("model")
@click.option("--instance", help=INSTANCE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print each progress line as JSON.")
@click.pass_context
def pull(ctx: click.Context, model: str, instance: str | None, as_json: bool) -> None:
    """Pull a model, with progress; Ctrl+C stops it (a later pull resumes)."""
    import contextlib

    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TaskID,
        TextColumn,
        TransferSpeedColumn,
    )

    from roundhouse.cli.output import console, print_json

    async def main() -> None:
        async with daemon_client(ctx) as client:
            if as_json:
                async for step in client.ollama_pull(model, instance):
                    print_json(step)
                return
            columns = (
                TextColumn("{task.description}"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
            )
            tasks: dict[str, TaskID] = {}
            with Progress(*columns, console=console, transient=False) as bar:
                status = bar.add_task("pulling manifest", total=None)
                async for step in client.ollama_pull(model, instance):
                    if step.digest and step.total:
                        if step.digest not in tasks:
                            name = step.digest.removeprefix("sha256:")[:12]
                            tasks[step.digest] = bar.add_task(name, total=step.total)
                        bar.update(tasks[step.digest], completed=step.completed or 0)
                    else:
                        bar.update(status, description=step.status)
            console.print(f"Pulled {model}.", highlight=False)

    with contextlib.suppress(KeyboardInterrupt):
        run_async(main())


@ollama.command()
@click.argument("model")
@click.option("--instance", help=INSTANCE_HELP)
@click.pass_context
def rm(ctx: click.Context, model: str, instance: str | None) -> None:
    """Delete a model from Ollama's disk."""
    from roundhouse.cli.output import console

    async def main() -> None:
        async with daemon_client(ctx) as client:
            await client.ollama_delete(model, instance)

    run_async(main())
    console.print(f"Deleted {model}.", highlight=False)


@ollama.command()
@click.argument("model")
@click.option("--keep-alive", help="How long to keep it loaded: '10m', '1h', seconds, or -1.")
@click.option("--context-length", type=click.IntRange(1), help="Context size (num_ctx).")
@click.option("--instance", help=INSTANCE_HELP)
@click.pass_context
def load(
    ctx: click.Context,
    model: str,
    keep_alive: str | None,
    context_length: int | None,
    instance: str | None,
) -> None:
    """Load a model into memory now, without generating."""
    from roundhouse.api.ollama import OllamaLoadRequest
    from roundhouse.cli.output import console

    keep: str | int | None = keep_alive
    if keep_alive is not None and keep_alive.lstrip("-").isdigit():
        keep = int(keep_alive)

    async def main() -> None:
        async with daemon_client(ctx) as client:
            request = OllamaLoadRequest(model=model, keep_alive=keep, context_length=context_length)
            await client.ollama_load(request, instance)

    run_async(main())
    console.print(f"Loaded {model}.", highlight=False)


@ollama.command()
@click.argument("model")
@click.option("--instance", help=INSTANCE_HELP)
@click.pass_context
def unload(ctx: click.Context, model: str, instance: str | None) -> None:
    """Free a model's memory now."""
    from roundhouse.cli.output import console

    async def main() -> None:
        async with daemon_client(ctx) as client:
            await client.ollama_unload(model, instance)

    run_async(main())
    console.print(f"Unloaded {model}.", highlight=False)
