"""Running the queue: start files up to the limit, end each in a state, stop them on demand."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp

# Public and documented, but exported lazily, so mypy cannot see it.
from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]

from roundhouse import __version__
from roundhouse.api.downloads import UNFINISHED_STATES, DownloadState
from roundhouse.api.settings import ModelsSettings
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.infra.transfer.fetch import Clock, Sleep, TransferPolicy
from roundhouse.core.infra.transfer.writer import Opener
from roundhouse.core.models.downloads.book import QueueBook
from roundhouse.core.models.downloads.entries import partial_path
from roundhouse.core.models.downloads.errors import DiskFullError, QuarantinedError
from roundhouse.core.models.downloads.hooks import EntryHooks
from roundhouse.core.models.downloads.layout import remove_partial
from roundhouse.core.models.downloads.runner import ItemRun
from roundhouse.core.models.downloads.space import DiskUsage, disk_full_words, free_bytes
from roundhouse.core.models.downloads.views import Intent, Live

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunDeps:
    """What a running file needs besides its entry; given by the service."""

    settings: Callable[[], ModelsSettings]
    read_token: Callable[[], Awaitable[str | None]]
    endpoint: str | None
    opener: Opener
    monotonic: Clock
    sleep: Sleep
    policy: TransferPolicy  # its stall timeout and attempts come from the settings
    quarantine_dir: Path
    disk_usage: DiskUsage


class Scheduler:
    """Starts queued files, oldest first, up to `max_concurrent_downloads`, never two that
    write the same partial file; each task ends its entry in a state and starts the next."""

    def __init__(self, book: QueueBook, deps: RunDeps) -> None:
        self._book = book
        self._deps = deps
        self.session: aiohttp.ClientSession | None = None
        self.running = False  # set by the service between start and close

    def pump(self) -> None:
        if not self.running:
            return
        limit = self._deps.settings().max_concurrent_downloads
        lives = self._book.lives.values()
        active = [live for live in lives if live.task is not None]
        busy = {live.entry.blob_key for live in active}
        waiting = sorted(
            (live for live in lives if live.entry.state == DownloadState.QUEUED),
            key=lambda live: live.entry.seq,
        )
        for live in waiting:
            if len(active) >= limit:
                break
            if live.task is not None or live.entry.blob_key in busy:
                continue
            live.entry.state = DownloadState.DOWNLOADING
            live.received = live.entry.bytes_done
            live.rate.reset(self._deps.monotonic(), live.received)
            live.task = asyncio.create_task(self._run(live), name=f"download-{live.entry.id}")
            active.append(live)
            busy.add(live.entry.blob_key)
        self._book.touch()

    async def stop(self, live: Live, intent: Intent) -> None:
        """Cancel the file's task and wait until it has left its entry in a state."""
        task = live.task
        if task is None:
            return
        live.intent = intent
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    async def stop_all(self) -> None:
        """The daemon stops: every transfer syncs its partial and is queued again."""
        self.running = False
        running = [live for live in self._book.lives.values() if live.task is not None]
        await asyncio.gather(*(self.stop(live, Intent.CLOSE) for live in running))

    async def discard(self, live: Live) -> None:
        """Cancelled: the partial file goes, unless another unfinished entry of the same
        blob continues from it."""
        entry = live.entry
        shared = any(
            other is not live
            and other.entry.blob_key == entry.blob_key
            and other.entry.state in UNFINISHED_STATES
            for other in self._book.lives.values()
        )
        if not shared:
            await asyncio.to_thread(remove_partial, partial_path(entry))
        entry.state, entry.bytes_done, entry.validator, entry.error = (
            DownloadState.CANCELLED,
            0,
            None,
            None,
        )
        live.received = 0

    async def _run(self, live: Live) -> None:
        entry = live.entry
        try:
            entry.error = None
            await self._book.save(live)
            target = await (await self._item_run(live)).run()
            entry.local_path, entry.bytes_done = str(target), entry.size
            entry.state, entry.error = DownloadState.DONE, None
        except asyncio.CancelledError:
            if live.intent is None:
                entry.state = DownloadState.QUEUED
                raise  # not ours (the loop is going away): let it through
            await self._after_stop(live, live.intent)
        except QuarantinedError as exc:
            entry.state, entry.error = DownloadState.QUARANTINED, exc.detail
            entry.quarantine_path, entry.bytes_done = str(exc.quarantine_path), 0
        except DiskFullError as exc:
            entry.state, entry.error = DownloadState.FAILED, await self._disk_full(live, exc)
        except RoundhouseError as exc:
            entry.state, entry.error = DownloadState.FAILED, exc.detail
        except Exception as exc:  # a bug must show as a failed download, not vanish
            log.exception("Download %s failed", entry.id)
            entry.state = DownloadState.FAILED
            entry.error = f"The download failed unexpectedly ({exc}); resume to try again."
        finally:
            live.task, live.intent, live.retrying = None, None, False
            # Shielded: a pause that lands now must not skip starting the next file.
            await asyncio.shield(self._after_run(live))

    async def _after_run(self, live: Live) -> None:
        await self._book.save(live, quiet=True)
        if self.running:
            try:
                await self._book.prune(self._deps.settings().max_finished_downloads)
            except RoundhouseError:
                log.exception("Pruning the download queue failed")
            self.pump()

    async def _after_stop(self, live: Live, intent: Intent) -> None:
        """Where a stopped task leaves its entry (the transfer synced the partial first)."""
        if intent == Intent.PAUSE:
            live.entry.state = DownloadState.PAUSED
        elif intent == Intent.CANCEL:
            await self.discard(live)
        else:
            live.entry.state = DownloadState.QUEUED

    async def _item_run(self, live: Live) -> ItemRun:
        deps = self._deps
        settings = deps.settings()
        token = await deps.read_token()
        # In a thread: huggingface_hub reads token files and, once per process, fetches a
        # registry from huggingface.co for its user agent (up to 3 s when offline).
        headers = await asyncio.to_thread(
            build_hf_headers, token=token, library_name="roundhouse", library_version=__version__
        )
        assert self.session is not None, "the service starts the scheduler with a session"
        return ItemRun(
            live.entry,
            session=self.session,
            headers=headers,
            endpoint=deps.endpoint,
            hooks=EntryHooks(
                live, monotonic=deps.monotonic, touch=self._book.touch, save=self._book.save_quietly
            ),
            policy=dataclasses.replace(
                deps.policy,
                stall_timeout_s=settings.stall_timeout_s,
                attempts=settings.download_attempts,
            ),
            opener=deps.opener,
            monotonic=deps.monotonic,
            sleep=deps.sleep,
            quarantine_dir=deps.quarantine_dir,
            on_verifying=lambda: self._book.set(live, DownloadState.VERIFYING),
        )

    async def _disk_full(self, live: Live, exc: DiskFullError) -> str:
        try:
            free = await asyncio.to_thread(free_bytes, exc.folder, self._deps.disk_usage)
        except OSError:
            free = 0
        remaining = self._book.remaining(live.entry.cache_dir)
        return disk_full_words(exc.folder, remaining, free, live.entry.bytes_done)
