"""Run `roundhouse chat`: one prompt or a prompt loop, on one event loop where Ctrl-C stops
the reply being streamed, not the chat."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from dataclasses import dataclass

from roundhouse.api.chat import Preset, SamplingParams
from roundhouse.base.paths import Home
from roundhouse.cli.chat_session import NO_PARAMS, ChatSession, Reply
from roundhouse.cli.chat_view import stats_line
from roundhouse.cli.output import err_console, fail, print_json
from roundhouse.client import ClientError, DaemonClient, DaemonNotRunningError
from roundhouse.client.chat_stream import ChatFailed

NO_MODEL = (
    "No model named, and none is active (none was picked, started or chatted with, and not "
    "exactly one is running). Name one: `roundhouse chat MODEL`, with a model from "
    "`roundhouse gateway models`; or start one first with `roundhouse engines start "
    "llama.cpp --model FILE.gguf`. Set one with `roundhouse settings set chat.active_model "
    "MODEL`, or pick it in the app's chat or the tray's Active model menu."
)
EXIT_WORDS = frozenset({"/exit", "/quit", "/bye"})
HELP = "/reset starts over, /exit or Ctrl-D ends, Ctrl-C stops a reply."
# What a shell reports for a program ended by Ctrl-C.
INTERRUPTED = 130


@dataclass(frozen=True)
class ChatOptions:
    model: str | None
    prompt: str | None
    system_prompt: str = ""
    params: SamplingParams = NO_PARAMS
    save: bool = True
    as_json: bool = False
    # data:image URLs sent with the first message.
    images: tuple[str, ...] = ()
    # A system-prompt preset's name: its text is the system prompt, its name kept with it.
    preset: str | None = None


def run_chat(home: Home, options: ChatOptions) -> int:
    """The exit code; errors end the command in words (SystemExit 1)."""
    try:
        client = DaemonClient.for_home(home)
    except DaemonNotRunningError as exc:
        fail(f"{exc} Start it with `roundhouse serve`, or open the app with `roundhouse`.")
    except ClientError as exc:
        fail(str(exc))
    # One loop for the whole chat (asyncio.run per reply would drop the client's
    # connections); asyncio.Runner turns Ctrl-C into cancelling the running step.
    with asyncio.Runner() as runner:
        try:
            model = options.model or runner.run(_active_model(client))
            if not model:
                fail(NO_MODEL)
            system_prompt, preset = options.system_prompt, None
            if options.preset is not None:
                found = runner.run(_preset(client, options.preset))
                system_prompt, preset = found.text, found.name
            session = ChatSession(
                client,
                model,
                system_prompt,
                options.params,
                save=options.save,
                out=None if options.as_json else sys.stdout,
                images=options.images,
                preset=preset,
            )
            if options.prompt is not None:
                return _one_shot(runner, session, options.prompt.strip(), options.as_json)
            return _interactive(runner, session)
        except ClientError as exc:
            fail(str(exc))
        finally:
            runner.run(client.aclose())


async def _preset(client: DaemonClient, name: str) -> Preset:
    """The saved preset of that name (any case); the command ends in words without one."""
    listed = (await client.chat_presets()).presets
    found = next(
        (p for p in listed if p.name.casefold() == " ".join(name.split()).casefold()), None
    )
    if found is None:
        names = ", ".join(p.name for p in listed) or "none yet"
        fail(
            f"No system-prompt preset named “{name}” (saved: {names}). Add one with "
            '`roundhouse chats presets add NAME "TEXT"`.'
        )
    return found


async def _active_model(client: DaemonClient) -> str | None:
    """The daemon's active model, the one the app's chat, quick chat and tray use."""
    return (await client.gateway_models()).active_model


def _exchange(runner: asyncio.Runner, session: ChatSession, prompt: str) -> Reply:
    """Run one turn (the daemon keeps it; a stopped one as far as it came). ChatFailed when
    the reply fails: the daemon keeps it marked failed, and never sends it again."""
    try:
        reply = runner.run(session.ask(prompt))
    except KeyboardInterrupt:
        # Before the daemon began the turn: it stops the reply once the stream closes.
        reply = session.stopped()
    if reply.not_saved:
        # The reply was shown; failing to save it must not cost the chat.
        err_console.print(
            f"[yellow]Not saved in the history:[/] {reply.not_saved}", highlight=False
        )
    return reply


def _end_line(reply: Reply) -> None:
    if reply.content and not reply.content.endswith("\n"):
        sys.stdout.write("\n")
    sys.stdout.flush()
    err_console.print(stats_line(reply.stats), style="dim", markup=False, highlight=False)


def _one_shot(runner: asyncio.Runner, session: ChatSession, prompt: str, as_json: bool) -> int:
    try:
        reply = _exchange(runner, session, prompt)
    except ChatFailed as exc:
        fail(exc.message)
    if as_json:
        print_json(
            {
                "model": session.model,
                "conversation_id": session.conversation.id if session.conversation else None,
                "content": reply.content,
                "reasoning": reply.reasoning or None,
                "stats": reply.stats.model_dump(mode="json"),
            }
        )
    else:
        _end_line(reply)
    return INTERRUPTED if reply.stats.stopped else 0


def _interactive(runner: asyncio.Runner, session: ChatSession) -> int:
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401 - line editing and history for input()
    err_console.print(f"Chatting with [bold]{session.model}[/]. {HELP}", highlight=False)
    while True:
        try:
            line = input("> ")
        except EOFError:
            sys.stdout.write("\n")
            return 0
        except KeyboardInterrupt:
            # As in Python's own prompt: Ctrl-C drops the line; Ctrl-D or /exit ends.
            sys.stdout.write("\n")
            continue
        prompt = line.strip()
        if not prompt:
            continue
        if prompt in EXIT_WORDS:
            return 0
        if prompt == "/reset":
            session.reset()
            err_console.print("Started over: the next prompt opens a new conversation.")
            continue
        if prompt.startswith("/") and " " not in prompt:
            err_console.print(f"Unknown command {prompt}. {HELP}", highlight=False)
            continue
        try:
            reply = _exchange(runner, session, prompt)
        except ChatFailed as exc:
            if session.shown:
                sys.stdout.write("\n")
            err_console.print(f"[bold red]Error:[/] {exc.message}", highlight=False)
            continue
        _end_line(reply)
