"""The change feed's publishers: each kind's state relayed from the service that changes it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from roundhouse.api.downloads import DownloadQueueView
from roundhouse.api.engines import EnginesOverview
from roundhouse.api.events import EventKind
from roundhouse.api.instances import InstanceList, LogCounts
from roundhouse.api.jobs import JobList
from roundhouse.api.library import LibraryList
from roundhouse.api.settings import Settings
from roundhouse.base.tasks import cancel_and_wait
from roundhouse.core.infra.changes import Changes
from roundhouse.core.infra.feed import CAPACITY, Feed, relay
from roundhouse.server.peers_view import peers_view

if TYPE_CHECKING:
    from roundhouse.core.models.library.service import LibraryService
    from roundhouse.server.models_wiring import ModelServices
    from roundhouse.server.services import DaemonServices

log = logging.getLogger(__name__)


class ChangeFeed:
    """The daemon's change feed (`GET /api/v1/events`) and the relays that fill it: built
    with the services, started once they all exist, stopped before they close."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.feed = Feed(capacity)
        self._tasks: list[asyncio.Task[None]] = []

    def settings_saved(self, settings: Settings) -> None:
        """The settings in force changed (a client saved them, or the active model moved)."""
        self.feed.publish(EventKind.SETTINGS, settings)

    def start(self, services: DaemonServices) -> None:
        instances = services.instances
        gateway = services.gateway

        async def instance_list() -> InstanceList:
            return InstanceList(instances=instances.all())

        async def gateway_models() -> BaseModel:
            return gateway.model_list()

        self.settings_saved(services.settings)
        self._run(
            "instances", relay(self.feed, EventKind.INSTANCES, instance_list, [instances.changes])
        )
        # What the gateway lists follows the instances, the library and the settings (its
        # aliases, the active model), and the presets (what it can start): it is read again
        # after any event or a preset's save, and published when it differs.
        # A circuit opening or closing changes it too (its `circuits`).
        # And what the paired machines serve.
        gateway_sources = [
            self.feed.changes,
            instances.presets.changes,
            gateway.health.changes,
            services.peer_watch.changes,
        ]
        self._run("gateway", relay(self.feed, EventKind.GATEWAY, gateway_models, gateway_sources))
        self._run("models", self._relay_models(services))
        # The one job board: installs, downloads, pulls, benchmarks and A/B runs.
        board = services.jobs

        async def job_list() -> JobList:
            return board.listing()

        self._run("jobs", relay(self.feed, EventKind.JOBS, job_list, [board.changes]))
        state = services.state

        async def engines_overview() -> EnginesOverview | None:
            return state.engines_detected

        self._run(
            "engines",
            relay(self.feed, EventKind.ENGINES, engines_overview, [state.engines_changes]),
        )

        async def log_counts() -> LogCounts:
            return instances.log_counts()

        # Counts only, never lines: a follower reads the new lines with the log route. An
        # instance that comes or restarts changes its count's generation.
        log_sources = [instances.log_changes, instances.changes]
        self._run("logs", relay(self.feed, EventKind.LOGS, log_counts, log_sources))
        self._relay_peers(services)
        updates = services.updates

        async def update_status() -> BaseModel:
            return updates.status()

        self._run("updates", relay(self.feed, EventKind.UPDATES, update_status, [updates.changes]))

    def _relay_peers(self, services: DaemonServices) -> None:
        """The paired machines: one paired, unpaired or moved, and what each one's change
        feed told (or why it could not be asked), as the watch reads it."""
        peers, watch = services.peers, services.peer_watch
        paired = Changes()
        peers.listeners.append(paired.touch)

        async def view() -> BaseModel:
            return await peers_view(peers, watch)

        self._run("peers", relay(self.feed, EventKind.PEERS, view, [paired, watch.seen_changes]))

    async def _relay_models(self, services: DaemonServices) -> None:
        """The library and the download queue, once the model services are open."""
        models = await services.models.ready()
        await asyncio.gather(
            relay(
                self.feed,
                EventKind.LIBRARY,
                _library_state(models.library),
                [models.library.changes],
            ),
            self._relay_downloads(models),
        )

    async def _relay_downloads(self, models: ModelServices) -> None:
        if models.downloads_error is not None:
            return
        # The queue users see, as its own stream follows it (built in the core).
        views: AsyncIterator[DownloadQueueView] = models.queue.follow()
        async for state in views:
            self.feed.publish(EventKind.DOWNLOADS, state)

    def _run(self, name: str, work: Coroutine[Any, Any, None]) -> None:
        self._tasks.append(asyncio.create_task(_logged(name, work), name=f"feed-{name}"))

    async def close(self) -> None:
        for task in self._tasks:
            await cancel_and_wait(task, reraise=False)
        self._tasks.clear()


def _library_state(
    library: LibraryService,
) -> Callable[[], Coroutine[Any, Any, LibraryList | None]]:
    async def state() -> LibraryList | None:
        last = library.last
        if last is not None and last.checking and not library.checking:
            # The headers it was reading are read: list what they say.
            return await library.scan()
        return last

    return state


async def _logged(name: str, work: Coroutine[Any, Any, None]) -> None:
    try:
        await work
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("The change feed stopped publishing %s", name)
