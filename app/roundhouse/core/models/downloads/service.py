"""The daemon's download queue: add, pause, resume, cancel; persisted, bounded, resumable.

Every file is an entry in SQLite (the data dir); its bytes go to `blobs/<etag>.incomplete` in
the hub cache, and finished files into the cache's layout. A stopped or killed daemon's
downloads are queued again by the next start and continue from the bytes they had.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp

from roundhouse.api.downloads import (
    RESUMABLE_STATES,
    UNFINISHED_STATES,
    DownloadItem,
    DownloadQueueView,
    DownloadRequest,
    DownloadState,
)
from roundhouse.api.jobs import JobKind
from roundhouse.api.settings import ModelsSettings
from roundhouse.core.errors import InvalidInputError, RoundhouseError
from roundhouse.core.infra.changes import Changes
from roundhouse.core.infra.jobs import JobBoard, JobMirror
from roundhouse.core.infra.transfer.fetch import Clock, Sleep, TransferPolicy, new_session
from roundhouse.core.infra.transfer.writer import Opener
from roundhouse.core.models.downloads.book import QueueBook
from roundhouse.core.models.downloads.entries import known_entry, new_entry
from roundhouse.core.models.downloads.errors import DownloadStateError
from roundhouse.core.models.downloads.folders import check_cache_folders
from roundhouse.core.models.downloads.layout import RepoCache, open_partial
from roundhouse.core.models.downloads.resolve import HubResolver, Resolver, check_request
from roundhouse.core.models.downloads.runner import label
from roundhouse.core.models.downloads.scheduler import RunDeps, Scheduler
from roundhouse.core.models.downloads.space import DiskUsage, check_space, free_bytes
from roundhouse.core.models.downloads.store import QUEUE_FILE, DownloadStore
from roundhouse.core.models.downloads.views import Intent, Live, item_of, queue_view

log = logging.getLogger(__name__)

# Blocking (a keyring may ask the desktop to unlock it): called in a thread. None lets
# huggingface_hub use its own (HF_TOKEN, `hf auth login`), as vLLM and mlx-lm would.
TokenSource = Callable[[], str | None]
MAX_UNFINISHED = 1000
QUARANTINE_DIR = "quarantine"
# Backoff, checkpoints, buffers (tests shorten them); stall timeout and attempts are settings.
DEFAULT_POLICY = TransferPolicy()


def no_token() -> str | None:
    return None


class DownloadService:
    """The queue. `start()` before use, `close()` at the end; the rest is async and
    returns api models. Dependencies with effects (clock, disk, HTTP, token) are given."""

    def __init__(
        self,
        data_dir: Path,
        *,
        hub_cache: Callable[[], Path],
        settings: Callable[[], ModelsSettings] = ModelsSettings,
        token: TokenSource = no_token,
        endpoint: str | None = None,
        resolver: Resolver | None = None,
        session: aiohttp.ClientSession | None = None,
        disk_usage: DiskUsage = shutil.disk_usage,
        opener: Opener = open_partial,
        clock: Clock = time.time,
        monotonic: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        policy: TransferPolicy = DEFAULT_POLICY,
        jobs: JobBoard | None = None,
    ) -> None:
        self.data_dir = data_dir
        self._hub_cache = hub_cache
        self._settings = settings
        self._token = token
        self._resolver = resolver or HubResolver(endpoint)
        self._session = session  # made by start() when not given
        self._disk_usage = disk_usage
        self._clock = clock
        self._monotonic = monotonic
        # Each file a job of the daemon's job board, when one is given.
        mirror = (
            None
            if jobs is None
            else JobMirror[Live](
                jobs,
                JobKind.DOWNLOAD,
                snapshot=lambda live: item_of(live, monotonic()),
                cancel=self.cancel,
            )
        )
        self._book = QueueBook(DownloadStore(data_dir / QUEUE_FILE), clock, mirror)
        self._scheduler = Scheduler(
            self._book,
            RunDeps(
                settings=settings,
                read_token=self._read_token,
                endpoint=endpoint,
                opener=opener,
                monotonic=monotonic,
                sleep=sleep,
                policy=policy,
                quarantine_dir=data_dir / QUARANTINE_DIR,
                disk_usage=disk_usage,
            ),
        )
        self._lock = asyncio.Lock()  # adds and resumes one at a time: one space check each
        self._started = False
        self._closing = False

    # -- life --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the queue; what was downloading or verifying when the last process stopped
        is queued again and continues from its partial file."""
        await self._book.load()
        self._scheduler.session = self._session or new_session()
        self._started = self._scheduler.running = True
        await self._book.prune(self._settings().max_finished_downloads)
        self._scheduler.pump()

    async def close(self) -> None:
        """Stop the transfers (partials synced and kept; queued again for the next start)."""
        self._closing = True
        await self._scheduler.stop_all()
        await self._book.store.close()
        session = self._scheduler.session
        if self._session is None and session is not None:
            await session.close()

    # -- reads -------------------------------------------------------------------------------

    def view(self) -> DownloadQueueView:
        return queue_view(
            list(self._book.lives.values()),
            self._monotonic(),
            self._settings().max_concurrent_downloads,
            str(self._hub_cache()),
        )

    def get(self, item_id: str) -> DownloadItem:
        return item_of(self._book.live(item_id), self._monotonic())

    @property
    def changes(self) -> Changes:
        """Touched on every change of the queue: the queue users see follows it."""
        return self._book.changes

    # -- actions -----------------------------------------------------------------------------

    async def add(self, request: DownloadRequest) -> list[DownloadItem]:
        """Resolve the request on the Hub (files, sizes, digests, pinned to a commit) and
        queue its files. A file already in the cache is done at once; one already in the
        queue is returned (queued again if it had failed). NotEnoughSpaceError when the disk
        lacks 1.2x what the whole queue, with these, still needs."""
        self._check_open()
        check_request(request)
        hub_cache = self._hub_cache()
        # Refused before the Hub is asked: a shared, writable cache is the user's to fix.
        await asyncio.to_thread(
            check_cache_folders, hub_cache, RepoCache(hub_cache, request.repo).root
        )
        token = await self._read_token()
        resolved = await asyncio.to_thread(self._resolver, request, token)
        cache_dir = str(hub_cache)
        async with self._lock:
            result: list[Live] = []
            fresh: list[Live] = []
            again: list[Live] = []
            for remote in resolved.files:
                known = known_entry(self._book.lives.values(), cache_dir, resolved, remote)
                if known is not None:
                    if known.entry.state not in UNFINISHED_STATES:
                        again.append(known)
                    result.append(known)
                    continue
                item_id = self._book.new_id(taken={live.entry.id for live in fresh})
                entry = await asyncio.to_thread(
                    new_entry, item_id, cache_dir, resolved, remote, self._clock()
                )
                fresh.append(Live(entry, received=entry.bytes_done))
                result.append(fresh[-1])
            await self._admit(cache_dir, fresh, again)
        self._scheduler.pump()
        return [self.get(live.entry.id) for live in result]

    async def pause(self, item_id: str) -> DownloadItem:
        live = self._book.live(item_id)
        state = live.entry.state
        if live.task is not None:
            await self._scheduler.stop(live, Intent.PAUSE)
        elif state == DownloadState.QUEUED:
            await self._book.set(live, DownloadState.PAUSED)
        elif state != DownloadState.PAUSED:
            raise DownloadStateError(
                f"{label(live.entry)} is {state.value}; only queued or downloading files pause."
            )
        return self.get(item_id)

    async def resume(self, item_id: str) -> DownloadItem:
        """Queue a paused, failed, cancelled or quarantined file again: from its partial
        file, or from the start after a cancel or a quarantine."""
        live = self._book.live(item_id)
        if live.entry.state == DownloadState.DONE:
            raise DownloadStateError(f"{label(live.entry)} is downloaded already.")
        if live.entry.state not in RESUMABLE_STATES:
            return self.get(item_id)
        cache = RepoCache(Path(live.entry.cache_dir), live.entry.repo)
        await asyncio.to_thread(check_cache_folders, cache.hub_cache, cache.root)
        async with self._lock:
            await self._admit(live.entry.cache_dir, [], [live])
        self._scheduler.pump()
        return self.get(item_id)

    async def cancel(self, item_id: str) -> DownloadItem:
        """Stop the file and delete its partial file (a finished file stays: remove it from
        the library instead)."""
        live = self._book.live(item_id)
        state = live.entry.state
        if state == DownloadState.DONE:
            raise DownloadStateError(
                f"{label(live.entry)} is downloaded already; delete it from the library."
            )
        if live.task is not None:
            await self._scheduler.stop(live, Intent.CANCEL)
        elif state != DownloadState.CANCELLED:
            await self._scheduler.discard(live)
            await self._book.save(live)
        self._scheduler.pump()
        return self.get(item_id)

    async def clear_finished(self) -> int:
        """Forget done and cancelled files (downloaded files stay); how many were forgotten."""
        gone = self._book.finished(DownloadState.DONE, DownloadState.CANCELLED)
        await self._book.forget([live.entry.id for live in gone])
        return len(gone)

    # -- admission ---------------------------------------------------------------------------

    async def _admit(self, cache_dir: str, fresh: list[Live], again: list[Live]) -> None:
        """Check the queue's bound and the disk, then save the new entries and queue the
        others again, in one transaction."""
        unfinished = self._book.unfinished_count()
        if unfinished + len(fresh) > MAX_UNFINISHED:
            raise InvalidInputError(
                f"The queue holds {unfinished:,} unfinished files; at most {MAX_UNFINISHED:,} "
                "may wait. Let some finish, or cancel some, then add more."
            )
        for live in again:
            if live.entry.state in (DownloadState.CANCELLED, DownloadState.QUARANTINED):
                live.entry.bytes_done, live.entry.validator, live.received = 0, None, 0
        extra = sum(
            live.entry.size - live.entry.bytes_done
            for live in [*fresh, *again]
            if live.entry.state != DownloadState.DONE
        )
        await self._check_space(cache_dir, extra)
        seq = self._book.next_seq()
        for offset, live in enumerate(fresh):
            live.entry.seq = seq + offset
        for live in again:
            live.entry.state, live.entry.error, live.entry.quarantine_path = (
                DownloadState.QUEUED,
                None,
                None,
            )
        await self._book.add(fresh, again)
        await self._book.prune(self._settings().max_finished_downloads)

    async def _check_space(self, cache_dir: str, extra: int) -> None:
        if extra <= 0:
            return
        folder = Path(cache_dir)
        free = await asyncio.to_thread(free_bytes, folder, self._disk_usage)
        remaining = self._book.remaining(cache_dir) + extra
        check_space(folder, remaining, free)

    async def _read_token(self) -> str | None:
        try:
            return await asyncio.to_thread(self._token)
        except RoundhouseError as exc:
            # A broken keyring must not stop public downloads; gated ones say so later.
            log.warning("No Hugging Face token (%s); downloading without one", exc.detail)
            return None

    def _check_open(self) -> None:
        if not self._started or self._closing:
            raise DownloadStateError("The download queue is not running (the daemon is stopping).")
