"""The active model: the one chats use when none is named, from the setting and what runs.

Chat, quick chat, the tray and `roundhouse chat` all ask the daemon for it, so they agree.
The setting (chat.active_model) is what the user last picked, started or chatted with; when
nothing the gateway lists matches it, the one model Roundhouse runs stands in for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from roundhouse.api.chat import NewMessage, Role
from roundhouse.api.instances import InstanceOrigin, InstanceStatus
from roundhouse.core.gateway.listing import Listed
from roundhouse.core.gateway.router import names_of


def resolve_active(chosen: str | None, listed: list[Listed]) -> str | None:
    """The chosen model while the gateway lists it (serving, loading or startable); else the
    only model a ready instance of Roundhouse's serves; else the chosen one, so a client can
    say that nothing serves it now."""
    if chosen and any(entry.model.id == chosen for entry in listed):
        return chosen
    return only_running(listed) or chosen


def only_running(listed: list[Listed]) -> str | None:
    """The model of the one ready instance Roundhouse runs, when it serves just one.

    An engine found running without Roundhouse does not count: it comes and goes by other
    programs' doing, and must not silently become the model chats are sent to."""
    running: dict[str, set[str]] = {}
    for entry in listed:
        info = entry.instance
        if info is None or entry.model.alias_of or info.origin == InstanceOrigin.EXTERNAL:
            continue
        if info.status == InstanceStatus.READY:
            running.setdefault(info.id, set()).add(entry.model.id)
    if len(running) != 1:
        return None
    (models,) = running.values()
    return next(iter(models)) if len(models) == 1 else None


def served_by(listed: list[Listed], instance_id: str) -> str | None:
    """The id the gateway lists an instance's model under (its first, not an alias)."""
    return next(
        (
            entry.model.id
            for entry in listed
            if entry.instance is not None
            and entry.instance.id == instance_id
            and not entry.model.alias_of
        ),
        None,
    )


def listed_name(listed: list[Listed], name: str | None) -> str | None:
    """The id the gateway lists a model under, for a name a request used (a path, a file
    name, an Ollama tag without `:latest`); None for a name nothing lists or serves."""
    if not name:
        return None
    if any(entry.model.id == name for entry in listed):
        return name
    return next(
        (
            entry.model.id
            for entry in listed
            if entry.instance is not None
            and not entry.model.alias_of
            and name in names_of(entry.instance)
        ),
        None,
    )


def answered_by(messages: Iterable[NewMessage]) -> str | None:
    """The model of the last reply that came back whole or stopped (not failed): the model
    last used in a chat."""
    found: str | None = None
    for message in messages:
        stats = message.stats
        if message.role == Role.ASSISTANT and stats is not None and stats.model and not stats.error:
            found = stats.model
    return found
