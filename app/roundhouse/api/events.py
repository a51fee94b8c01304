"""The change feed's events (`GET /api/v1/events`): a sequence number, a kind, the new state.

Each event carries the whole state of its kind as the kind's own route returns it (the
instance list, the settings, the library, the download queue, the jobs, the gateway's
models, the engines found, each engine's count of output lines), so a follower replaces
what it holds instead of applying a difference. A `reset` says that what the follower
holds may be stale (it is new, its resume point fell out of the daemon's window, or the
daemon restarted): load every kind again, then apply the events after it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from roundhouse.api.downloads import DownloadQueueView
from roundhouse.api.engines import EnginesOverview
from roundhouse.api.gateway import GatewayModelList
from roundhouse.api.instances import InstanceList, LogCounts
from roundhouse.api.jobs import JobList
from roundhouse.api.library import LibraryList
from roundhouse.api.peers import PeersView
from roundhouse.api.settings import Settings
from roundhouse.api.updates import UpdateStatus


class EventKind(StrEnum):
    """The topics of the feed; the SSE `event` field of each message."""

    RESET = "reset"
    INSTANCES = "instances"
    JOBS = "jobs"
    DOWNLOADS = "downloads"
    GATEWAY = "gateway"
    SETTINGS = "settings"
    LIBRARY = "library"
    ENGINES = "engines"
    LOGS = "logs"
    PEERS = "peers"
    UPDATES = "updates"


class ResetReason(StrEnum):
    # The follower gave no resume point: it has nothing yet.
    NEW = "new"
    # Its resume point is older than the oldest event the daemon still keeps.
    BEHIND = "behind"
    # Its resume point is newer than any event: it was another run of the daemon.
    UNKNOWN = "unknown"


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int = Field(ge=0, description="the event's place in the feed; resume after it")
    at: float = Field(description="when it was published (seconds since the epoch)")


class ResetEvent(_Event):
    """Load every kind again (its route's GET), then apply the events that follow."""

    kind: Literal[EventKind.RESET] = EventKind.RESET
    reason: ResetReason
    oldest: int = Field(ge=0, description="the oldest event's seq the daemon still keeps")


class InstancesEvent(_Event):
    """An instance started, became ready, stopped, failed, was adopted or removed."""

    kind: Literal[EventKind.INSTANCES] = EventKind.INSTANCES
    data: InstanceList


class SettingsEvent(_Event):
    """The settings were saved (by any client, or by the daemon: the active model)."""

    kind: Literal[EventKind.SETTINGS] = EventKind.SETTINGS
    data: Settings


class LibraryEvent(_Event):
    """The library was scanned, or a model imported or deleted."""

    kind: Literal[EventKind.LIBRARY] = EventKind.LIBRARY
    data: LibraryList


class DownloadsEvent(_Event):
    """The download queue (files and Ollama pulls) changed; at most a few per second."""

    kind: Literal[EventKind.DOWNLOADS] = EventKind.DOWNLOADS
    data: DownloadQueueView


class JobsEvent(_Event):
    """A job (install, download, Ollama pull, benchmark, A/B run) was added, moved on or
    ended: every job the daemon keeps, in the one shape of every kind."""

    kind: Literal[EventKind.JOBS] = EventKind.JOBS
    data: JobList


class GatewayEvent(_Event):
    """What the gateway serves, loads or can start, and its active model, changed."""

    kind: Literal[EventKind.GATEWAY] = EventKind.GATEWAY
    data: GatewayModelList


class EnginesEvent(_Event):
    """The engines were detected again (at start, after an install, a build switched or
    removed, an environment removed, or a client asked): the whole overview."""

    kind: Literal[EventKind.ENGINES] = EventKind.ENGINES
    data: EnginesOverview


class LogsEvent(_Event):
    """An instance's output grew: how many lines each one's process wrote (the lines
    themselves are read with `GET /api/v1/instances/{id}/logs?since=`)."""

    kind: Literal[EventKind.LOGS] = EventKind.LOGS
    data: LogCounts


class PeersEvent(_Event):
    """A machine was paired, unpaired or moved, or a paired machine told something new
    about itself (its instances, what it serves) or stopped answering: the whole view."""

    kind: Literal[EventKind.PEERS] = EventKind.PEERS
    data: PeersView


class UpdatesEvent(_Event):
    """The update check answered (or failed), or its setting was turned on or off: the
    status as `GET /api/v1/updates` returns it."""

    kind: Literal[EventKind.UPDATES] = EventKind.UPDATES
    data: UpdateStatus


FeedEvent = Annotated[
    ResetEvent
    | InstancesEvent
    | SettingsEvent
    | LibraryEvent
    | DownloadsEvent
    | JobsEvent
    | GatewayEvent
    | EnginesEvent
    | LogsEvent
    | PeersEvent
    | UpdatesEvent,
    Field(discriminator="kind"),
]
# An event of state (not a reset).
StateEvent = (
    InstancesEvent
    | SettingsEvent
    | LibraryEvent
    | DownloadsEvent
    | JobsEvent
    | GatewayEvent
    | EnginesEvent
    | LogsEvent
    | PeersEvent
    | UpdatesEvent
)

FEED_EVENT: TypeAdapter[FeedEvent] = TypeAdapter(FeedEvent)


def parse_event(data: str | bytes) -> FeedEvent:
    """One event from its JSON (an SSE message's data, or a line of `roundhouse events --json`)."""
    return FEED_EVENT.validate_json(data)
