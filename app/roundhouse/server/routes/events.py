"""The change feed's route: every change the daemon makes, as one resumable SSE stream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent

from roundhouse.server.deps import Feed, Services
from roundhouse.server.streams import until_stopped

router = APIRouter(tags=["events"])

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


@router.get("/events", response_class=EventSourceResponse)
async def events(
    services: Services,
    feed: Feed,
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
    items = feed.feed.follow(resume_point(last_event_id, since))
    async for item in until_stopped(items, services.stopping):
        yield ServerSentEvent(id=str(item.seq), event=item.kind, raw_data=item.json)
