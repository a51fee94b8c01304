"""The queue's entries in memory and on disk, kept in step: save, prune, forget, count."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Collection

from roundhouse.api.downloads import JOB_STATES, UNFINISHED_STATES, DownloadState
from roundhouse.core.errors import NotFoundError, RoundhouseError
from roundhouse.core.infra.changes import Changes
from roundhouse.core.infra.jobs import JobMirror
from roundhouse.core.infra.transfer.fetch import Clock
from roundhouse.core.models.downloads.records import Entry
from roundhouse.core.models.downloads.store import DownloadStore
from roundhouse.core.models.downloads.views import Live

log = logging.getLogger(__name__)


class QueueBook:
    """Every entry by id, with its live state; each change saved and announced."""

    def __init__(
        self, store: DownloadStore, clock: Clock, jobs: JobMirror[Live] | None = None
    ) -> None:
        self.store = store
        self.changes = Changes()
        self.lives: dict[str, Live] = {}
        self._clock = clock
        # Each file as a job of the daemon's job board (None: no board, used alone).
        self._mirror = jobs

    async def load(self) -> list[Entry]:
        """Read the file; what a stopped process left downloading or verifying is queued."""
        entries = await self.store.load()
        requeued = []
        for entry in entries:
            if entry.state in (DownloadState.DOWNLOADING, DownloadState.VERIFYING):
                entry.state = DownloadState.QUEUED
                requeued.append(entry)
            self.lives[entry.id] = live = Live(entry, received=entry.bytes_done)
            self.sync_job(live)
        if requeued:
            await self.store.save(*requeued)
        return requeued

    def live(self, item_id: str) -> Live:
        try:
            return self.lives[item_id]
        except KeyError:
            raise NotFoundError(
                f"No download has the id {item_id!r}; list them with `roundhouse models downloads`."
            ) from None

    def new_id(self, taken: Collection[str] = ()) -> str:
        """10 random hex digits, safe in a URL and a shell, used by no entry (nor `taken`)."""
        while True:
            candidate = secrets.token_hex(5)
            if candidate not in self.lives and candidate not in taken:
                return candidate

    def next_seq(self) -> int:
        return max((live.entry.seq for live in self.lives.values()), default=0) + 1

    def touch(self) -> None:
        self.changes.touch()

    def sync_job(self, live: Live) -> None:
        """Copy the entry's state onto its job of the board (at each save, not each chunk:
        the queue's own follow carries the bytes)."""
        if self._mirror is None:
            return
        entry = live.entry
        self._mirror.sync(
            entry.id,
            live,
            JOB_STATES[entry.state],
            started_at=entry.created_at,
            fraction=min(1.0, live.bytes_now() / entry.size) if entry.size else None,
            message=f"{entry.repo}: {entry.path}",
            error=entry.error,
        )

    async def set(self, live: Live, state: DownloadState) -> None:
        live.entry.state = state
        await self.save(live)

    async def save(self, live: Live, *, quiet: bool = False) -> None:
        """Persist the entry and wake followers; `quiet` logs a failed write instead of
        raising it (a task ending must still end)."""
        live.entry.updated_at = self._clock()
        try:
            await self.store.save(live.entry)
        except RoundhouseError:
            if not quiet:
                raise
            log.exception("Saving download %s failed", live.entry.id)
        finally:
            self.sync_job(live)
            self.changes.touch()

    async def save_quietly(self, live: Live) -> None:
        await self.save(live, quiet=True)

    async def add(self, fresh: list[Live], again: list[Live]) -> None:
        """New entries and entries queued again, saved in one transaction."""
        now = self._clock()
        for live in again:
            live.entry.updated_at = now
        await self.store.save(*(live.entry for live in [*fresh, *again]))
        for live in fresh:
            self.lives[live.entry.id] = live
        for live in [*fresh, *again]:
            self.sync_job(live)
        self.changes.touch()

    def unfinished_count(self) -> int:
        return sum(live.entry.state in UNFINISHED_STATES for live in self.lives.values())

    def remaining(self, cache_dir: str, exclude: list[Live] | None = None) -> int:
        """Bytes the unfinished entries of one hub cache still need."""
        skip = {id(live) for live in exclude or []}
        return sum(
            max(0, live.entry.size - live.bytes_now())
            for live in self.lives.values()
            if live.entry.cache_dir == cache_dir
            and live.entry.state in UNFINISHED_STATES
            and id(live) not in skip
        )

    def finished(self, *states: DownloadState) -> list[Live]:
        """Entries in `states` (default: every finished one), oldest change first."""
        wanted = set(states) if states else set(DownloadState) - UNFINISHED_STATES
        return sorted(
            (
                live
                for live in self.lives.values()
                if live.entry.state in wanted and live.task is None
            ),
            key=lambda live: (live.entry.updated_at, live.entry.seq),
        )

    async def prune(self, keep: int) -> None:
        """Forget the oldest finished entries beyond `keep` (their files stay on disk)."""
        finished = self.finished()
        await self.forget([live.entry.id for live in finished[: max(0, len(finished) - keep)]])

    async def forget(self, ids: list[str]) -> None:
        if not ids:
            return
        await self.store.delete(ids)
        for item_id in ids:
            self.lives.pop(item_id, None)
            if self._mirror is not None:
                self._mirror.forget(item_id)
        self.changes.touch()
