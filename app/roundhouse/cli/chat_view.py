"""How the chat commands show a reply's figures and the chat history on a terminal."""

from __future__ import annotations

import time

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roundhouse.api.chat import (
    Conversation,
    ConversationList,
    Message,
    PresetList,
    ReplyStats,
    Role,
    SearchResults,
)


def stats_line(stats: ReplyStats) -> str:
    """One line: who served it, time to the first token, tokens, speed, how it ended."""
    parts = [stats.engine or stats.model or "reply"]
    if stats.instance:
        parts[0] += f" ({stats.instance})"
    if stats.ttft_ms is not None:
        parts.append(f"{stats.ttft_ms:,.0f} ms to first token")
    if stats.completion_tokens is not None:
        prompt = f" (prompt {stats.prompt_tokens:,})" if stats.prompt_tokens is not None else ""
        parts.append(f"{stats.completion_tokens:,} tokens{prompt}")
    if stats.tokens_per_s is not None:
        parts.append(f"{stats.tokens_per_s:,.1f} tok/s")
    if stats.duration_s is not None:
        parts.append(f"{stats.duration_s:.2f} s")
    if stats.stopped:
        parts.append("stopped")
    elif stats.finish_reason == "length":
        parts.append("cut at the token limit")
    return " · ".join(parts)


def _when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def conversations_view(answer: ConversationList) -> RenderableType:
    if not answer.conversations:
        return Text("No conversations yet. Start one with `roundhouse chat MODEL`.")
    table = Table(box=None, pad_edge=False)
    for column in ("ID", "Title", "Model", "Messages", "Updated"):
        table.add_column(column, justify="right" if column == "Messages" else "left")
    for item in answer.conversations:
        table.add_row(
            item.id,
            Text(item.title),
            Text(item.model or "—"),
            str(item.message_count),
            _when(item.updated_at),
        )
    return table


def conversation_view(chat: Conversation) -> RenderableType:
    lines: list[RenderableType] = [
        Text.assemble((chat.title, "bold"), f"  {chat.id} · {chat.model or 'no model'}"),
        Text(f"started {_when(chat.created_at)}, updated {_when(chat.updated_at)}", "dim"),
    ]
    if chat.system_prompt:
        lines += [Text(""), Text("System", "bold magenta"), Text(chat.system_prompt)]
    if chat.preset:
        lines.append(Text(f"system prompt from the preset “{chat.preset}”", "dim"))
    for message in chat.messages:
        user = message.role == Role.USER
        heading = Text("You" if user else "Assistant", "bold cyan" if user else "bold")
        heading.append(f"  #{message.id}", "dim")
        if message.branches > 1:
            heading.append(f"  version {message.branch}/{message.branches}", "yellow")
        lines += [Text(""), heading]
        if message.reasoning:
            lines.append(Text(message.reasoning, "dim italic"))
        lines.append(Text(message.content))
        if message.stats is not None:
            if message.stats.error:
                lines.append(Text(f"Failed: {message.stats.error}", "red"))
            else:
                lines.append(Text(stats_line(message.stats), "dim"))
    branched = [m for m in chat.messages if m.branches > 1]
    if branched:
        lines += [Text(""), _branches_note(chat.id, branched)]
    return Group(*lines)


def _branches_note(chat_id: str, branched: list[Message]) -> Text:
    """Which messages have other versions, and the command that shows one."""
    others = [i for m in branched for i in m.sibling_ids if i != m.id]
    return Text(
        f"{len(branched)} message(s) here have other versions (#"
        + ", #".join(str(i) for i in others)
        + f"). Show one with `roundhouse chats branch {chat_id} MESSAGE_ID`.",
        "yellow",
    )


def search_view(results: SearchResults) -> RenderableType:
    if not results.hits:
        return Text(f"Nothing in the chat history matches “{results.query}”.")
    table = Table(box=None, pad_edge=False)
    for column in ("ID", "Title", "Where", "Text"):
        table.add_column(column, overflow="fold" if column == "Text" else "ellipsis")
    for hit in results.hits:
        where = "title" if hit.message_id is None else f"#{hit.message_id} ({hit.role})"
        table.add_row(hit.conversation_id, Text(hit.title), where, Text(hit.snippet))
    if not results.truncated:
        return table
    more = Text("More matched: narrow the words, or raise --limit.", "dim")
    return Group(table, more)


def presets_view(answer: PresetList) -> RenderableType:
    if not answer.presets:
        return Text(
            'No system-prompt presets yet. Add one with `roundhouse chats presets add NAME "TEXT"`.'
        )
    table = Table(box=None, pad_edge=False)
    table.add_column("Name")
    table.add_column("Text", overflow="fold")
    for preset in answer.presets:
        first = preset.text.strip().splitlines()[0] if preset.text.strip() else ""
        more = "…" if len(preset.text.strip().splitlines()) > 1 or len(first) > 80 else ""
        table.add_row(Text(preset.name), Text(first[:80] + more))
    return table
