"""`roundhouse chats branch|search|export|import|presets`: the chat history's branches,
search, export and import, and system-prompt presets, through the daemon."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from roundhouse.cli.daemon_link import daemon_client, run_async, show_from_daemon

if TYPE_CHECKING:
    from roundhouse.api.chat import Conversation


@click.command()
@click.argument("conversation_id")
@click.argument("message_id", type=click.IntRange(1))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def branch(ctx: click.Context, conversation_id: str, message_id: int, as_json: bool) -> None:
    """Show another version of a message: MESSAGE_ID is one of the versions `chats show`
    lists. The conversation then follows it to its newest reply, and goes on from there."""
    from roundhouse.cli.chat_view import conversation_view

    show_from_daemon(
        ctx,
        as_json,
        lambda c: c.switch_chat_branch(conversation_id, message_id),
        conversation_view,
    )


@click.command()
@click.argument("text")
@click.option(
    "--limit", type=click.IntRange(1, 200), default=50, show_default=True, help="At most this many."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def search(ctx: click.Context, text: str, limit: int, as_json: bool) -> None:
    """Find TEXT in the conversations' titles and messages (every branch), the most
    recently updated first."""
    from roundhouse.cli.chat_view import search_view
    from roundhouse.cli.output import fail

    if not text.strip():
        fail("Nothing to search for: give some words, e.g. `roundhouse chats search docker`.")
    show_from_daemon(ctx, as_json, lambda c: c.search_chats(text, limit), search_view)


@click.command("export")
@click.argument("conversation_id")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "json"]),
    default="md",
    show_default=True,
    help="md: the branch shown, to read; json: every branch, for `chats import`.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write to this file (default: standard output).",
)
@click.pass_context
def export_chat(ctx: click.Context, conversation_id: str, fmt: str, output: Path | None) -> None:
    """Export a conversation as Markdown or as JSON."""
    import sys

    from roundhouse.cli.output import err_console, fail

    async def fetch() -> str:
        async with daemon_client(ctx) as client:
            if fmt == "md":
                return await client.export_chat_markdown(conversation_id)
            return (await client.export_chat(conversation_id)).model_dump_json(indent=2) + "\n"

    text = run_async(fetch())
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"Could not write {output}: {exc.strerror or exc}. Choose another file.")
    err_console.print(f"Exported {conversation_id} to {output}.", highlight=False)


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def import_chat(ctx: click.Context, file: Path, as_json: bool) -> None:
    """Add a conversation from a JSON export (`chats export ID --format json`), with every
    branch. A file too large, of another version or malformed is refused; nothing of it
    is kept then."""
    from roundhouse.api.chat import MAX_IMPORT_BYTES
    from roundhouse.cli.output import console, fail, print_json

    try:
        size = file.stat().st_size
        if size > MAX_IMPORT_BYTES:
            fail(
                f"{file} is {size / 1_048_576:.1f} MiB; an import may be at most "
                f"{MAX_IMPORT_BYTES // 1_048_576} MiB."
            )
        raw = file.read_bytes()
    except OSError as exc:
        fail(f"Could not read {file}: {exc.strerror or exc}.")

    async def send() -> Conversation:
        async with daemon_client(ctx) as client:
            return await client.import_chat(raw)

    chat = run_async(send())
    if as_json:
        print_json(chat)
    else:
        console.print(
            f"Imported as {chat.id} (“{chat.title}”). Show it with "
            f"`roundhouse chats show {chat.id}`.",
            highlight=False,
        )


@click.group()
def presets() -> None:
    """System-prompt presets: saved, named prompts a chat starts with (`--preset NAME`)."""


@presets.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def list_presets(ctx: click.Context, as_json: bool) -> None:
    """List the presets by name."""
    from roundhouse.cli.chat_view import presets_view

    show_from_daemon(ctx, as_json, lambda c: c.chat_presets(), presets_view)


@presets.command("add")
@click.argument("name")
@click.argument("text", required=False)
@click.option(
    "--file",
    "-f",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read the prompt from this file.",
)
@click.pass_context
def add_preset(ctx: click.Context, name: str, text: str | None, file: Path | None) -> None:
    """Save TEXT (or --file's) as the preset NAME; an existing NAME gets the new text."""
    from roundhouse.cli.output import console, fail

    if file is not None and text is None:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"Could not read {file} as text: {exc}.")
    elif text is None or file is not None:
        fail('Give the prompt as TEXT or with --file FILE: `chats presets add Brief "Be brief."`')
    prompt = text

    async def save() -> str:
        async with daemon_client(ctx) as client:
            return (await client.save_chat_preset(name, prompt)).name

    console.print(f"Saved the preset “{run_async(save())}”.", highlight=False)


@presets.command("remove")
@click.argument("name")
@click.pass_context
def remove_preset(ctx: click.Context, name: str) -> None:
    """Remove a preset; the conversations that use it keep its text."""
    from roundhouse.cli.output import console

    async def delete() -> None:
        async with daemon_client(ctx) as client:
            await client.delete_chat_preset(name)

    run_async(delete())
    console.print(f"Removed the preset “{name}”.", highlight=False)
