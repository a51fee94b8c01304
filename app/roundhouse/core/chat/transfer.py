"""A conversation out of the history and back: JSON with every branch (read back by import,
checked in words), and Markdown of the branch shown, for reading and sharing."""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic import ValidationError

from roundhouse.api.chat import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    MAX_IMPORT_BYTES,
    ChatExport,
    Conversation,
    ExportedMessage,
    Message,
    Role,
)
from roundhouse.core.errors import InvalidInputError

NOT_AN_EXPORT = (
    "This file is not a Roundhouse chat export: export one with `roundhouse chats export ID "
    "--format json` or the Chat page's Export as JSON…"
)


def to_export(conversation: Conversation, messages: list[Message], leaf: int | None) -> ChatExport:
    return ChatExport(
        title=conversation.title,
        model=conversation.model,
        system_prompt=conversation.system_prompt,
        preset=conversation.preset,
        params=conversation.params,
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
        current=leaf,
        messages=[
            ExportedMessage(
                id=m.id,
                parent=m.parent_id,
                role=m.role,
                content=m.content,
                reasoning=m.reasoning,
                stats=m.stats,
                images=m.images,
                created_at=m.created_at,
            )
            for m in messages
        ],
    )


def _when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def to_markdown(conversation: Conversation) -> str:
    """The branch shown, as Markdown; a message with other versions says so."""
    lines = [f"# {conversation.title}", ""]
    facts = [f"Model: {conversation.model or 'none'}", f"started {_when(conversation.created_at)}"]
    if conversation.preset:
        facts.append(f"preset “{conversation.preset}”")
    lines += [" · ".join(facts), ""]
    if conversation.system_prompt.strip():
        lines += ["## System", "", conversation.system_prompt.strip(), ""]
    for message in conversation.messages:
        heading = "You" if message.role == Role.USER else "Assistant"
        if message.role == Role.ASSISTANT and message.stats is not None and message.stats.model:
            heading += f" · {message.stats.model}"
        if message.branches > 1:
            heading += f" (version {message.branch} of {message.branches})"
        lines += [f"## {heading}", ""]
        if message.reasoning:
            quoted = "\n".join(f"> {line}" for line in message.reasoning.strip().splitlines())
            lines += [quoted, ""]
        if message.images:
            lines += [f"*{len(message.images)} image(s) attached*", ""]
        lines += [message.content.strip(), ""]
        if message.stats is not None and message.stats.error:
            lines += [f"*The reply failed: {message.stats.error}*", ""]
    if any(m.branches > 1 for m in conversation.messages):
        lines += ["---", "", "*Other versions of some messages are kept in the JSON export.*", ""]
    return "\n".join(lines)


def parse_export(raw: bytes) -> ChatExport:
    """A file read for import, checked whole: InvalidInputError in words otherwise."""
    if len(raw) > MAX_IMPORT_BYTES:
        raise InvalidInputError(
            f"The file is {len(raw) / 1_048_576:.1f} MiB; an import may be at most "
            f"{MAX_IMPORT_BYTES // 1_048_576} MiB."
        )
    try:
        data: Any = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"The file is not valid JSON ({exc}). {NOT_AN_EXPORT}") from exc
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise InvalidInputError(NOT_AN_EXPORT)
    version = data.get("version")
    if version != EXPORT_VERSION:
        raise InvalidInputError(
            f"The file is a chat export of version {version!r}; this Roundhouse reads version "
            f"{EXPORT_VERSION}. Update Roundhouse, or export it again from this one."
        )
    try:
        export = ChatExport.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InvalidInputError(
            f"The chat export is malformed at {where}: {first['msg']}. Nothing was imported."
        ) from exc
    _check_tree(export)
    return export


def _check_tree(export: ChatExport) -> None:
    """Ids are unique and each parent comes before its children (so no loops)."""
    seen: set[int] = set()
    for message in export.messages:
        if message.id in seen:
            raise InvalidInputError(
                f"The chat export is malformed: message {message.id} appears twice. "
                "Nothing was imported."
            )
        if message.parent is not None and message.parent not in seen:
            raise InvalidInputError(
                f"The chat export is malformed: message {message.id} follows message "
                f"{message.parent}, which does not come before it. Nothing was imported."
            )
        seen.add(message.id)
    if export.current is not None and export.current not in seen:
        raise InvalidInputError(
            f"The chat export is malformed: its current message {export.current} is not in "
            "it. Nothing was imported."
        )
