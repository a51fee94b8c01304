"""The bridge's store, fed by the daemon's change feed: one stream, resumed where it broke.

The session follows `GET /api/v1/events` while connected. Each event carries the whole state
of its kind, so the store replaces what it holds and says so by a signal; pages read the
store and listen, and nothing in the app asks the daemon again to see a change. A reset (a
new follower, one that fell behind, or a daemon that restarted) loads the kinds the store
keeps with their own GETs, then the events after it apply. A broken stream resumes after
the last event applied, so nothing between is lost.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from roundhouse.api.bench import AbProgress, BenchProgress
from roundhouse.api.events import (
    DownloadsEvent,
    EnginesEvent,
    FeedEvent,
    GatewayEvent,
    InstancesEvent,
    JobsEvent,
    LibraryEvent,
    LogsEvent,
    PeersEvent,
    ResetEvent,
    SettingsEvent,
    UpdatesEvent,
)
from roundhouse.api.jobs import JobKind, JobView
from roundhouse.client import ClientError, DaemonClient
from roundhouse.gui.call import Failure

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Coroutine
    from typing import Any

    from PySide6.QtCore import SignalInstance

    from roundhouse.api.downloads import DownloadQueueView
    from roundhouse.api.engines import EnginesOverview
    from roundhouse.api.gateway import GatewayModelList
    from roundhouse.api.instances import InstanceInfo, LogCount
    from roundhouse.api.peers import PeersView
    from roundhouse.api.settings import Settings, UiSettings
    from roundhouse.api.updates import UpdateStatus


class FeedMixin:
    """Follows the change feed into the store (mixed into DaemonBridge)."""

    if TYPE_CHECKING:
        # Provided by DaemonBridge (and _spawn by the tasks mixin).
        _client: DaemonClient | None
        instances: list[InstanceInfo] | None
        ui_settings: UiSettings
        ui_settings_changed: SignalInstance
        instances_failed: SignalInstance
        settings_changed: SignalInstance
        gateway_changed: SignalInstance
        library_changed: SignalInstance
        downloads_changed: SignalInstance
        jobs_changed: SignalInstance
        log_counts_changed: SignalInstance
        peers_changed: SignalInstance
        updates_changed: SignalInstance
        feed_reset: SignalInstance
        feed_applied: SignalInstance

        def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]: ...

        async def _load_engines(self, *, refresh: bool) -> None: ...

        def _set_engines(self, engines: EnginesOverview) -> None: ...

        # Provided by InstancesMixin.
        def _set_instances(self, instances: list[InstanceInfo]) -> None: ...

    def _init_feed(self) -> None:
        """The store's state, empty until the first reset (called by DaemonBridge.__init__)."""
        # The seq of the last event applied: the resume point of the next connection.
        self.feed_seq: int | None = None
        self.settings_full: Settings | None = None
        self.gateway_models: GatewayModelList | None = None
        # The download queue as the feed last told it (None until it changes once).
        self.downloads: DownloadQueueView | None = None
        self.jobs: dict[str, JobView] = {}
        # How many lines each instance's engine wrote, by id (the log window follows it).
        self.log_counts: dict[str, LogCount] = {}
        # The paired machines as the feed last told (None until it changes once; the
        # Machines page loads them on `feed_reset`).
        self.peers: PeersView | None = None
        # The update check's status as the feed last told it (None until it is told once).
        self.update_status: UpdateStatus | None = None

    async def _follow_feed(self) -> None:
        """Apply every event of the feed until it ends or breaks (the session reconnects)."""
        client = self._client
        assert client is not None
        async with contextlib.aclosing(client.events(since=self.feed_seq)) as events:
            async for event in events:
                await self._apply_event(client, event)
                self.feed_seq = event.seq
                self.feed_applied.emit(event.seq)

    async def _apply_event(self, client: DaemonClient, event: FeedEvent) -> None:
        match event:
            case ResetEvent():
                await self._reload(client)
                self.feed_reset.emit()
            case InstancesEvent(data=listed):
                self._set_instances(listed.instances)
            case SettingsEvent(data=settings):
                self._set_settings(settings)
            case GatewayEvent(data=models):
                self.gateway_models = models
                self.gateway_changed.emit(models)
            case LibraryEvent(data=library):
                self.library_changed.emit(library)
            case DownloadsEvent(data=queue):
                self.downloads = queue
                self.downloads_changed.emit(queue)
            case JobsEvent(data=listed):
                self.jobs = {job.id: job for job in listed.jobs}
                self.jobs_changed.emit(listed.jobs)
            case EnginesEvent(data=overview):
                # Detected again (an install ended, a build switched or removed, Pythons
                # saved, a refresh asked anywhere): every page that shows engines hears it.
                self._set_engines(overview)
            case LogsEvent(data=counts):
                self.log_counts = {count.id: count for count in counts.instances}
                self.log_counts_changed.emit(self.log_counts)
            case PeersEvent(data=view):
                self.peers = view
                self.peers_changed.emit(view)
            case UpdatesEvent(data=status):
                self.update_status = status
                self.updates_changed.emit(status)

    async def _reload(self, client: DaemonClient) -> None:
        """What the store holds may be stale: load it again (the events after the reset then
        apply on top). The settings were loaded as the session connected; the jobs, the
        gateway's models, the log counts and the paired machines are each follower's to load
        on `feed_reset`."""
        # The gateway's models may be stale: the next to look lists them again (and keeps
        # them here), and the feed's gateway events keep them from there.
        self.gateway_models = None
        self.peers = None
        # Engine detection can take seconds (it asks each tool its version): the engines
        # load on their own, and a daemon that cannot list them still serves the rest.
        self._spawn(self._load_engines(refresh=False))
        try:
            listed = await client.instances()
        except ClientError as exc:
            self.instances_failed.emit(str(Failure.from_error(exc)))
        else:
            self._set_instances(listed.instances)

    def _set_settings(self, settings: Settings) -> None:
        self.settings_full = settings
        self.settings_changed.emit(settings)
        if settings.ui != self.ui_settings:
            self.ui_settings = settings.ui
            self.ui_settings_changed.emit(settings.ui)

    # -- jobs of a kind, in their own shape ---------------------------------------------

    def bench_progress(self, job_id: str) -> BenchProgress | None:
        """A benchmark's progress as the feed last told it; None before it is heard of."""
        job = self.jobs.get(job_id)
        if job is None or job.kind != JobKind.BENCH or job.detail is None:
            return None
        return BenchProgress.model_validate(job.detail)

    def ab_progress(self, job_id: str) -> AbProgress | None:
        """An A/B run's progress as the feed last told it; None before it is heard of."""
        job = self.jobs.get(job_id)
        if job is None or job.kind != JobKind.AB or job.detail is None:
            return None
        return AbProgress.model_validate(job.detail)
