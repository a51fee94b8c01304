"""`roundhouse setup`: the first-run guide in the terminal, the same steps as the app's."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import click

from roundhouse.base.paths import Home

NO_TERMINAL = (
    "`roundhouse setup` asks before it installs or downloads anything, and there is no "
    "terminal to ask on. Run it in a terminal, or answer yes to every step with "
    "`roundhouse setup --yes` (add --engine and --model to choose)."
)
GUIDED = ("llama.cpp", "mlx", "ollama")


@dataclass(frozen=True)
class SetupOptions:
    yes: bool
    engine: str | None
    model: str | None
    offline: bool
    skip_download: bool
    chat: bool
    prompt: str | None
    max_tokens: int
    ctx_size: int | None


@click.command()
@click.option("--yes", "-y", is_flag=True, help="Ask nothing: take the recommended choices.")
@click.option("--engine", type=click.Choice(GUIDED), help="Use this engine, not the recommended.")
@click.option("--model", "-m", help="A starter's id (or a listed model's name) to use.")
@click.option("--offline", is_flag=True, help="Ask no Hub: only models on this machine.")
@click.option(
    "--skip-download", is_flag=True, help="Download nothing: use a model already on this machine."
)
@click.option("--no-chat", is_flag=True, help="Stop before starting the model and chatting.")
@click.option("--prompt", "-p", help="The first message to the model.")
@click.option(
    "--max-tokens", type=click.IntRange(1), default=256, show_default=True, help="Reply length."
)
@click.option("--ctx-size", type=click.IntRange(64), help="llama.cpp's context (default 4096).")
@click.pass_context
def setup(
    ctx: click.Context,
    yes: bool,
    engine: str | None,
    model: str | None,
    offline: bool,
    skip_download: bool,
    no_chat: bool,
    prompt: str | None,
    max_tokens: int,
    ctx_size: int | None,
) -> None:
    """Set Roundhouse up: this machine's engine, a starter model that fits it, a first chat.

    Each step says what it does and what it costs, and asks first (unless --yes). Steps
    already done (an engine installed, a model downloaded) are skipped, so it works offline
    with what is on this machine.
    """
    from roundhouse.cli.daemon_link import home_of, run_async

    if not yes and not sys.stdin.isatty():
        from roundhouse.cli.output import fail

        fail(NO_TERMINAL, code=2)
    options = SetupOptions(
        yes=yes,
        engine=engine,
        model=model,
        offline=offline,
        skip_download=skip_download,
        chat=not no_chat,
        prompt=prompt,
        max_tokens=max_tokens,
        ctx_size=ctx_size,
    )
    run_async(run_setup(home_of(ctx), options))


async def run_setup(home: Home, options: SetupOptions) -> None:
    from roundhouse.api.engines import EngineId
    from roundhouse.cli import setup_steps as steps
    from roundhouse.cli.output import console, err_console, fail
    from roundhouse.cli.setup_view import guide_view, starters_view, step_title
    from roundhouse.client import DaemonClient
    from roundhouse.client.lifecycle import ensure_daemon, probe_status

    ask = steps.Asker(options.yes)
    if not (await probe_status(home)).running:
        with err_console.status("Starting the Roundhouse daemon…"):
            await ensure_daemon(home)
    async with DaemonClient.for_home(home) as client:
        console.print(step_title(1, "This machine and its engine"))
        guide = await client.setup_guide()
        console.print(guide_view(guide))
        wanted = EngineId(options.engine) if options.engine else guide.recommended
        choice = next((c for c in guide.engines if c.engine == wanted), None)
        if choice is None:
            names = ", ".join(c.engine.value for c in guide.engines)
            fail(f"{wanted.value} does not suit this machine for the guide: choose one of {names}.")
        await steps.prepare_engine(client, choice, ask)

        console.print(step_title(2, "A starter model"))
        with err_console.status("Sizing the starter models for this machine…"):
            starters = await client.starters(choice.engine.value, offline=options.offline)
        console.print(starters_view(starters))
        option = steps.choose_option(starters, ask, options.model, options.skip_download)

        console.print(step_title(3, f"Download {option.title}"))
        if option.downloaded:
            console.print(f"[green]✓[/] Already on this machine: {option.model}", highlight=False)
        elif options.skip_download:
            fail(f"{option.title} is not on this machine, and --skip-download downloads nothing.")
        else:
            await steps.download(client, option, ask)
            listed = await client.starters(choice.engine.value, offline=True)
            found = next((o for o in listed.options if o.id == option.id and o.model), None)
            if found is None:
                fail(f"{option.title} was downloaded but the library does not list it yet.")
            option = found
            console.print(f"[green]✓[/] Downloaded to {option.model}", highlight=False)

        if not options.chat:
            await steps.mark_done(client, None)
            console.print("\nSet up. Start it and chat with `roundhouse run`, or open the app.")
            return
        console.print(step_title(4, "The first chat"))
        served = await steps.serve(client, option, options.ctx_size)
        prompt = options.prompt or ask.text("Say something to it", steps.SUGGESTED_PROMPT)
        await steps.first_chat(client, served, prompt, options.max_tokens)
        await steps.mark_done(client, served.model)
        console.print(
            f"\n[bold]All set.[/] Chat again with `roundhouse chat {served.model}`, open the app "
            f"with `roundhouse`, or point any OpenAI client at {client.base_url}/v1.",
            highlight=False,
        )
