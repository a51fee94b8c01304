"""`roundhouse chat` (one prompt, or an interactive chat) and `roundhouse chats` (the history)."""

from __future__ import annotations

from pathlib import Path

import click

from roundhouse.cli.daemon_link import daemon_client, run_async, show_from_daemon


@click.command()
@click.argument("model", required=False)
@click.option("--prompt", "-p", help="Send this, print the reply and end (default: a chat).")
@click.option("--system", "-s", "system_prompt", default="", help="A system prompt.")
@click.option("--temperature", type=click.FloatRange(0, 2), help="Sampling temperature.")
@click.option("--top-p", type=click.FloatRange(0, 1, min_open=True), help="Nucleus sampling.")
@click.option("--max-tokens", type=click.IntRange(1, 1_000_000), help="At most this many tokens.")
@click.option(
    "--image",
    "-i",
    "images",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Attach this image (PNG, JPEG, WebP, GIF; up to 4) to the first message, for a "
    "vision model.",
)
@click.option(
    "--preset",
    help="Use this saved system-prompt preset (`roundhouse chats presets list`).",
)
@click.option("--no-save", is_flag=True, help="Keep this chat out of the history.")
@click.option("--json", "as_json", is_flag=True, help="One prompt: print the result as JSON.")
@click.pass_context
def chat(
    ctx: click.Context,
    model: str | None,
    prompt: str | None,
    system_prompt: str,
    temperature: float | None,
    top_p: float | None,
    max_tokens: int | None,
    images: tuple[Path, ...],
    preset: str | None,
    no_save: bool,
    as_json: bool,
) -> None:
    """Chat with MODEL through the gateway (default: the active model, as in the app: the
    one last picked, started or chatted with, else the only one running).

    With --prompt, or text piped on standard input, it sends that once, streams the reply
    to standard output and its figures to standard error. Otherwise it opens a chat: /reset
    starts over, /exit or Ctrl-D ends, Ctrl-C stops a reply. Each chat is saved in the
    history (`roundhouse chats`) unless --no-save. --image FILE goes with the first message;
    a model that cannot read images says so before anything is sent.
    """
    import sys

    from roundhouse.api.chat import SamplingParams
    from roundhouse.cli.chat_images import read_images
    from roundhouse.cli.chat_runner import ChatOptions, run_chat
    from roundhouse.cli.daemon_link import home_of
    from roundhouse.cli.output import fail

    if prompt is None and not sys.stdin.isatty():
        prompt = sys.stdin.read()
    if prompt is not None and not prompt.strip():
        fail("Nothing to send: the prompt is empty. Give one with --prompt TEXT or on stdin.")
    if as_json and prompt is None:
        fail("--json prints one reply: give the prompt with --prompt TEXT or on stdin.")
    if preset is not None and system_prompt:
        fail("Give either --system TEXT or --preset NAME, not both.")
    options = ChatOptions(
        model=model,
        prompt=prompt,
        system_prompt=system_prompt,
        params=SamplingParams(temperature=temperature, top_p=top_p, max_tokens=max_tokens),
        save=not no_save,
        as_json=as_json,
        images=read_images(images),
        preset=preset,
    )
    raise SystemExit(run_chat(home_of(ctx), options))


@click.group()
def chats() -> None:
    """The chat history the daemon keeps: list, show, search, branch, export, import, rm,
    and the system-prompt presets."""


@chats.command("list")
@click.option("--limit", type=click.IntRange(1), help="At most this many, the newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def list_chats(ctx: click.Context, limit: int | None, as_json: bool) -> None:
    """List the conversations, the most recently updated first."""
    from roundhouse.cli.chat_view import conversations_view

    show_from_daemon(ctx, as_json, lambda c: c.chats(limit), conversations_view)


@chats.command()
@click.argument("conversation_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def show(ctx: click.Context, conversation_id: str, as_json: bool) -> None:
    """Show a conversation with its messages and each reply's figures."""
    from roundhouse.cli.chat_view import conversation_view

    show_from_daemon(ctx, as_json, lambda c: c.chat(conversation_id), conversation_view)


@chats.command()
@click.argument("conversation_ids", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def rm(ctx: click.Context, conversation_ids: tuple[str, ...], as_json: bool) -> None:
    """Delete conversations from the history."""
    from roundhouse.cli.output import console, print_json

    async def delete() -> None:
        async with daemon_client(ctx) as client:
            for conversation_id in conversation_ids:
                await client.delete_chat(conversation_id)

    run_async(delete())
    if as_json:
        print_json({"deleted": list(conversation_ids)})
    else:
        console.print(f"Deleted {', '.join(conversation_ids)}.", highlight=False)


def _add_history_commands() -> None:
    from roundhouse.cli.chat_history_commands import (
        branch,
        export_chat,
        import_chat,
        presets,
        search,
    )

    for command in (search, branch, export_chat, import_chat, presets):
        chats.add_command(command)


_add_history_commands()
