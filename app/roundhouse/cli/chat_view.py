"""How the chat commands show a reply's figures and the chat history on a terminal."""

from __future__ import annotations

import time

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roundhouse.api.chat import Conversation, ConversationList, ReplyStats, Role


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
    for message in chat.messages:
        user = message.role == Role.USER
        lines += [Text(""), Text("You" if user else "Assistant", "bold cyan" if user else "bold")]
        if message.reasoning:
            lines.append(Text(message.reasoning, "dim italic"))
        lines.append(Text(message.content))
        if message.stats is not None:
            if message.stats.error:
                lines.append(Text(f"Failed: {message.stats.error}", "red"))
            else:
                lines.append(Text(stats_line(message.stats), "dim"))
    return Group(*lines)
