"""The steps of `roundhouse setup`, each through the daemon: engine, model, download, first chat."""

from __future__ import annotations

import sys
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from roundhouse.api.chat import (
    ChatDelta,
    NewConversation,
    ReplyStats,
    SamplingParams,
    TurnRequest,
)
from roundhouse.api.downloads import (
    DownloadQueueView,
    DownloadRequest,
    DownloadState,
    OllamaDownloadRequest,
)
from roundhouse.api.engines import EngineId
from roundhouse.api.installs import InstallRequest, JobState
from roundhouse.api.starters import (
    EngineChoice,
    EngineSetupState,
    ServedStarter,
    ServeStarterRequest,
    StarterList,
    StarterOption,
)
from roundhouse.base.units import format_bytes
from roundhouse.cli.output import console, err_console, fail
from roundhouse.cli.setup_view import engine_view

if TYPE_CHECKING:
    from roundhouse.client import DaemonClient

SUGGESTED_PROMPT = "Hello! In one sentence, what can you help me with?"
_ENDED = frozenset(
    {DownloadState.DONE, DownloadState.FAILED, DownloadState.CANCELLED, DownloadState.QUARANTINED}
)


@dataclass(frozen=True)
class Asker:
    """Asks on the terminal, or answers yes to everything (`--yes`)."""

    yes: bool

    def confirm(self, question: str) -> bool:
        return self.yes or click.confirm(question, default=True)

    def number(self, question: str, default: int, count: int) -> int:
        if self.yes:
            return default
        return int(click.prompt(question, default=default, type=click.IntRange(1, count)))

    def text(self, question: str, default: str) -> str:
        return default if self.yes else str(click.prompt(question, default=default))


async def prepare_engine(client: DaemonClient, choice: EngineChoice, ask: Asker) -> None:
    """Make the engine usable: nothing, an install Roundhouse runs, or Ollama attached."""
    from roundhouse.cli.engines_install import follow_install

    console.print(engine_view(choice))
    if choice.state == EngineSetupState.EXTERNAL:
        where = f" Get it from {choice.install_url}." if choice.install_url else ""
        fail(
            f"{choice.title} is not installed.{where} Then run `roundhouse setup` again, or "
            "choose another engine with --engine."
        )
    if choice.state == EngineSetupState.INSTALL:
        if not ask.confirm(f"Install {choice.title} now?"):
            fail(f"Nothing was installed. Later: `roundhouse engines install {choice.engine}`.")
        job = await client.install_engine(choice.engine.value, InstallRequest())
        job = await follow_install(client, job, quiet=False)
        if job.state != JobState.DONE:
            fail(job.error or f"The install of {choice.title} did not finish.")
        console.print(f"[green]✓[/] Installed {choice.title}.", highlight=False)
    if choice.engine == EngineId.OLLAMA:
        with err_console.status("Connecting to Ollama…"):
            info = await client.setup_ollama()
        console.print(f"[green]✓[/] Ollama serves at {info.url}.", highlight=False)


def choose_option(
    starters: StarterList, ask: Asker, wanted: str | None, local_only: bool
) -> StarterOption:
    """The option named by --model, else the one the user picks (the recommended first)."""
    options = starters.options
    if wanted is not None:
        for option in options:
            if wanted.casefold() in (option.id.casefold(), option.title.casefold()):
                return option
        fail(f"No model {wanted!r} in the list: name one of {', '.join(o.id for o in options)}.")
    # Offline, only what is on this machine can be used.
    local_only = local_only or not starters.online
    usable = [o for o in options if o.problem is None and (o.downloaded or not local_only)]
    default = next((o for o in usable if o.id == starters.recommended), None)
    if default is None and usable:
        default = max(usable, key=lambda o: o.size_bytes)
    if default is None:
        fail(starters.reason)
    number = ask.number("Which model?", options.index(default) + 1, len(options))
    return options[number - 1]


async def download(client: DaemonClient, option: StarterOption, ask: Asker) -> None:
    """Queue the model's files in the daemon and show their progress until they are done."""
    if option.problem:
        fail(f"{option.title} cannot be downloaded now: {option.problem}")
    cost = option.download.in_words() if option.download else format_bytes(option.size_bytes)
    if not ask.confirm(f"Download {option.title} ({cost})?"):
        fail("Nothing was downloaded. Run `roundhouse setup` again when you are ready.")
    if option.ollama_tag is not None:
        pull = await client.add_ollama_pull(OllamaDownloadRequest(model=option.ollama_tag))
        ids = {pull.id}
    else:
        assert option.repo is not None
        request = DownloadRequest(
            repo=option.repo, files=option.files, pattern=None if option.files else "*"
        )
        queued = await client.add_download(request)
        wanted = set(option.files)
        mine = [i for i in queued.items if i.repo == option.repo and i.state not in _ENDED]
        ids = {i.id for i in mine if not wanted or i.path in wanted}
    failed = await _follow(client, ids) if ids else None
    if failed:
        fail(f"The download did not finish: {failed} Resume it with `roundhouse models downloads`.")


async def _follow(client: DaemonClient, ids: set[str]) -> str | None:
    """Progress bars until every item ended; the failures in words, or None."""
    from rich.progress import TaskID

    from roundhouse.cli.models_pull import download_progress

    latest: dict[str, _Line] = {}
    with download_progress() as progress:
        tasks: dict[str, TaskID] = {}
        async with aclosing(client.follow_downloads()) as views:
            async for view in views:
                latest = _lines(view, ids)
                for item_id, line in latest.items():
                    if item_id not in tasks:
                        tasks[item_id] = progress.add_task(line.name, total=None, state="")
                    progress.update(
                        tasks[item_id],
                        completed=line.done,
                        total=line.size or None,
                        state=line.state.value,
                    )
                if latest and all(line.state in _ENDED for line in latest.values()):
                    break
    errors = [
        f"{line.name}: {line.error or line.state.value}"
        for line in latest.values()
        if line.state != DownloadState.DONE
    ]
    return "; ".join(errors) or None


@dataclass(frozen=True)
class _Line:
    name: str
    size: int
    done: int
    state: DownloadState
    error: str | None


def _lines(view: DownloadQueueView, ids: set[str]) -> dict[str, _Line]:
    """The queue's items of this download, files and Ollama pulls alike."""
    out = {
        i.id: _Line(i.path, i.size, i.bytes_done, i.state, i.error)
        for i in view.items
        if i.id in ids
    }
    for pull in view.ollama:
        if pull.id in ids:
            out[pull.id] = _Line(pull.model, pull.size, pull.bytes_done, pull.state, pull.error)
    return out


async def serve(client: DaemonClient, option: StarterOption, ctx_size: int | None) -> ServedStarter:
    assert option.model is not None
    request = ServeStarterRequest(engine=option.engine, model=option.model, ctx_size=ctx_size)
    with err_console.status(f"Starting {option.engine.value} with {option.title}…"):
        served = await client.serve_starter(request)
    console.print(
        f"[green]✓[/] {option.title} is served by {served.instance.engine.value} "
        f"(instance {served.instance.id}) as [bold]{served.model}[/].",
        highlight=False,
    )
    return served


async def first_chat(
    client: DaemonClient, served: ServedStarter, prompt: str, max_tokens: int
) -> ReplyStats:
    """Stream one reply to the terminal; the daemon keeps the exchange in the chat history."""
    from roundhouse.cli.chat_view import stats_line
    from roundhouse.client.chat_stream import ChatFailed, take_turn

    new = NewConversation(model=served.model, params=SamplingParams(max_tokens=max_tokens))
    console.print(f"[bold cyan]You:[/] {prompt}", highlight=False)

    def show(delta: ChatDelta) -> None:
        if delta.content:
            sys.stdout.write(delta.content)
            sys.stdout.flush()

    try:
        ended = await take_turn(client, TurnRequest(new=new, content=prompt), show)
    except ChatFailed as exc:
        fail(f"The first chat failed: {exc.message}")
    sys.stdout.write("\n")
    stats = ended.reply.stats or ReplyStats()
    err_console.print(stats_line(stats), style="dim", markup=False, highlight=False)
    return stats


async def mark_done(client: DaemonClient, model: str | None) -> None:
    """The guide is done: the app will not open it again; the model becomes the active one
    unless one is set."""
    settings = await client.settings()
    chat = settings.chat
    if model is not None and chat.active_model is None:
        chat = chat.model_copy(update={"active_model": model})
    ui = settings.ui.model_copy(update={"first_run_done": True})
    await client.put_settings(settings.model_copy(update={"ui": ui, "chat": chat}))
