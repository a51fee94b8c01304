"""The change feed's route: every change the daemon makes, as one resumable SSE stream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Depends, Header, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent

from roundhouse.api.events import EventKind
from roundhouse.core.errors import InvalidInputError
from roundhouse.server.deps import Services
from roundhouse.server.streams import until_stopped

if TYPE_CHECKING:
    from roundhouse.server.services import DaemonServices

router = APIRouter(tags=["events"])

ALL_KINDS = frozenset(k.value for k in EventKind if k != EventKind.RESET)

# A resume point no run of the daemon gave: the follower is told to reset.
_UNREADABLE = -1


def resume_point(last_event_id: str | None, since: int | None) -> int | None:
    """Where to resume: the `Last-Event-ID` a reconnecting EventSource sends (the newest),
    else `since`; None for a new follower. An id this daemon could not have sent resumes
    nowhere: the follower is told to reset rather than refused."""
    if last_event_id is not None and last_event_id.strip():
        text = last_event_id.strip()
        return int(text) if text.isascii() and text.isdigit() and len(text) < 20 else _UNREADABLE
    return since


def chosen_kinds(kinds: str | None, allowed: frozenset[str] = ALL_KINDS) -> frozenset[str]:
    """The kinds a follower asked for (comma-separated; None: all it may have), within
    `allowed`; a reset always comes. An unknown kind is refused in words."""
    if kinds is None or not kinds.strip():
        return allowed | {EventKind.RESET}
    asked = {k.strip() for k in kinds.split(",") if k.strip()}
    unknown = sorted(asked - allowed)
    if unknown:
        raise InvalidInputError(
            f"Unknown event kind {', '.join(repr(k) for k in unknown)}: choose among "
            f"{', '.join(sorted(allowed))}."
        )
    return frozenset(asked) | {EventKind.RESET}


async def followed(
    services: DaemonServices, resume: int | None, kinds: frozenset[str]
) -> AsyncIterator[ServerSentEvent]:
    """The feed from `resume` on, the chosen kinds only, until the daemon stops."""
    items = services.feed.feed.follow(resume)
    async for item in until_stopped(items, services.stopping):
        if item.kind in kinds:
            yield ServerSentEvent(id=str(item.seq), event=item.kind, raw_data=item.json)


KindsQuery = Query(
    default=None,
    max_length=200,
    description="comma-separated kinds to follow (instances, gateway, ...); default: all",
)


def asked_kinds(kinds: str | None = KindsQuery) -> frozenset[str]:
    """The `kinds` query, checked as a dependency: before the stream starts, so that an
    unknown kind is a 400 in words rather than a stream cut short."""
    return chosen_kinds(kinds)


@router.get("/events", response_class=EventSourceResponse)
async def events(
    services: Services,
    chosen: Annotated[frozenset[str], Depends(asked_kinds)],
    since: Annotated[
        int | None,
        Query(ge=0, description="the seq of the last event applied: the stream resumes after it"),
    ] = None,
    last_event_id: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> AsyncIterator[ServerSentEvent]:
    """Every change as an SSE message: `id` the event's seq, `event` its kind (instances,
    jobs, downloads, gateway, settings, library, or reset), `data` the event's JSON with
    the kind's whole state. Without a resume point, or one the daemon no longer keeps, a
    `reset` comes first: load every kind again, then apply what follows. A keep-alive
    comment comes every 15 s of quiet; the stream ends when the daemon stops."""
    async for message in followed(services, resume_point(last_event_id, since), chosen):
        yield message
