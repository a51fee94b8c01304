"""The daemon's Ollama pulls: queued beside the Hub downloads, persisted, limited, resumable.

Each job pulls through Ollama's API (`/api/pull`); the bytes land in Ollama's own store.
Pause ends the stream (Ollama keeps the partial layers), resume pulls again (it continues
from them). A job that was running when the daemon stopped is pulled again at the next start.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable
from contextlib import aclosing
from pathlib import Path

from roundhouse.api.downloads import (
    JOB_STATES,
    OLLAMA_ID_PREFIX,
    UNFINISHED_STATES,
    DownloadState,
    OllamaPullItem,
)
from roundhouse.api.jobs import JobKind
from roundhouse.api.settings import ModelsSettings
from roundhouse.core.engines.ollama_api import OllamaClient, OllamaNotRunningError
from roundhouse.core.errors import InvalidInputError, NotFoundError, RoundhouseError
from roundhouse.core.infra.changes import Changes
from roundhouse.core.infra.jobs import JobBoard, JobMirror
from roundhouse.core.models.downloads.errors import DownloadStateError
from roundhouse.core.models.downloads.views import Intent
from roundhouse.core.models.ollama_pulls.jobs import PullJob, apply_step, check_model_name, item_of
from roundhouse.core.models.ollama_pulls.records import PULLS_FILE, PullEntry
from roundhouse.core.models.ollama_pulls.store import PullStore

log = logging.getLogger(__name__)

Clock = Callable[[], float]
Connect = Callable[[str], OllamaClient]
MAX_UNFINISHED = 1000
SAVE_EVERY_S = 2.0  # progress is saved this often; states at once
CANCEL_NOTE = (
    "Ollama keeps the layers it fetched until it cleans up unused files itself (at its next "
    "start); resuming, or pulling the model again, reuses them."
)
PAUSE_NOTE = "Ollama keeps the layers it fetched; resume continues from them."


class OllamaPulls:
    """The pull jobs. `start()` before use, `close()` at the end; the rest is async and
    returns api models. The clock and the Ollama client's maker are given (tests shorten)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        settings: Callable[[], ModelsSettings] = ModelsSettings,
        connect: Connect = OllamaClient,
        clock: Clock = time.time,
        monotonic: Clock = time.monotonic,
        jobs: JobBoard | None = None,
    ) -> None:
        self._store = PullStore(data_dir / PULLS_FILE)
        # Each pull a job of the daemon's job board, when one is given.
        self._mirror = (
            None
            if jobs is None
            else JobMirror[PullJob](
                jobs,
                JobKind.OLLAMA_PULL,
                snapshot=lambda job: item_of(job, monotonic()),
                cancel=self.cancel,
            )
        )
        self._settings = settings
        self._connect = connect
        self._clock = clock
        self._monotonic = monotonic
        self._changes = Changes()
        self.jobs: dict[str, PullJob] = {}
        self._running = False

    # -- life --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the jobs; those that were pulling when the last process stopped are queued."""
        again = []
        for entry in await self._store.load():
            if entry.state in (DownloadState.DOWNLOADING, DownloadState.VERIFYING):
                entry.state = DownloadState.QUEUED
                again.append(entry)
            self.jobs[entry.id] = PullJob(entry)
            self._sync_job(self.jobs[entry.id])
        if again:
            await self._store.save(*again)
        self._running = True
        await self._prune()
        self._pump()

    async def close(self) -> None:
        """Stop the pulls (queued again for the next start) and close the file."""
        self._running = False
        running = [job for job in self.jobs.values() if job.task is not None]
        await asyncio.gather(*(self._stop(job, Intent.CLOSE) for job in running))
        await self._store.close()

    # -- reads -------------------------------------------------------------------------------

    def items(self) -> list[OllamaPullItem]:
        now = self._monotonic()
        return [item_of(job, now) for job in sorted(self.jobs.values(), key=_seq)]

    def get(self, item_id: str) -> OllamaPullItem:
        return item_of(self._job(item_id), self._monotonic())

    def holds(self, item_id: str) -> bool:
        """Whether the item is one of these pulls (the queue asks, not the id's prefix)."""
        return item_id in self.jobs

    @property
    def changes(self) -> Changes:
        """Touched on every change of a pull: the queue users see follows it."""
        return self._changes

    # -- actions -----------------------------------------------------------------------------

    async def add(self, model: str, base_url: str, instance: str | None = None) -> OllamaPullItem:
        """Queue a pull of `model` into the Ollama at `base_url`. A pull of it there that has
        not finished is returned (resumed when it was paused, failed or cancelled)."""
        if not self._running:
            raise DownloadStateError("The download queue is not running (the daemon is stopping).")
        name = check_model_name(model)
        key = (name, base_url)
        same = [j for j in self.jobs.values() if (j.entry.model, j.entry.base_url) == key]
        newest = max(same, key=_seq, default=None)
        if newest is not None and newest.entry.state != DownloadState.DONE:
            if newest.entry.state not in UNFINISHED_STATES - {DownloadState.PAUSED}:
                return await self.resume(newest.entry.id)
            return self.get(newest.entry.id)
        unfinished = sum(j.entry.state in UNFINISHED_STATES for j in self.jobs.values())
        if unfinished >= MAX_UNFINISHED:
            raise InvalidInputError(
                f"The queue holds {unfinished:,} unfinished Ollama pulls; at most "
                f"{MAX_UNFINISHED:,} may wait. Let some finish, or cancel some, then add more."
            )
        now = self._clock()
        entry = PullEntry(
            id=self._new_id(),
            seq=max((j.entry.seq for j in self.jobs.values()), default=0) + 1,
            model=name,
            base_url=base_url,
            instance=instance,
            state=DownloadState.QUEUED,
            status="",
            error=None,
            note=None,
            created_at=now,
            updated_at=now,
        )
        await self._store.save(entry)
        self.jobs[entry.id] = PullJob(entry)
        self._sync_job(self.jobs[entry.id])
        self._changes.touch()
        self._pump()
        return self.get(entry.id)

    async def pause(self, item_id: str) -> OllamaPullItem:
        job = self._job(item_id)
        state = job.entry.state
        if job.task is not None:
            await self._stop(job, Intent.PAUSE)
        elif state == DownloadState.QUEUED:
            job.entry.state, job.entry.note = DownloadState.PAUSED, None
            await self._save(job)
        elif state != DownloadState.PAUSED:
            raise DownloadStateError(
                f"The pull of {job.entry.model} is {state.value}; only queued or running pulls "
                "pause."
            )
        return self.get(item_id)

    async def resume(self, item_id: str) -> OllamaPullItem:
        """Pull a paused, failed or cancelled model again: Ollama continues from its layers."""
        job = self._job(item_id)
        entry = job.entry
        if entry.state == DownloadState.DONE:
            raise DownloadStateError(f"{entry.model} is pulled already.")
        if entry.state in (DownloadState.PAUSED, DownloadState.FAILED, DownloadState.CANCELLED):
            entry.state, entry.error, entry.note = DownloadState.QUEUED, None, None
            await self._save(job)
            self._pump()
        return self.get(item_id)

    async def cancel(self, item_id: str) -> OllamaPullItem:
        """Stop the pull and mark it cancelled; Ollama's partial layers stay until it cleans up."""
        job = self._job(item_id)
        entry = job.entry
        if entry.state == DownloadState.DONE:
            raise DownloadStateError(
                f"{entry.model} is pulled already; delete it with `roundhouse ollama rm "
                f"{entry.model}` or on the Ollama page."
            )
        if job.task is not None:
            await self._stop(job, Intent.CANCEL)
        elif entry.state != DownloadState.CANCELLED:
            entry.state, entry.error, entry.note = DownloadState.CANCELLED, None, CANCEL_NOTE
            await self._save(job)
        self._pump()
        return self.get(item_id)

    async def clear_finished(self) -> int:
        """Forget done and cancelled pulls (the models stay in Ollama)."""
        gone = [
            job.entry.id
            for job in self.jobs.values()
            if job.task is None and job.entry.state in (DownloadState.DONE, DownloadState.CANCELLED)
        ]
        await self._forget(gone)
        return len(gone)

    # -- running -----------------------------------------------------------------------------

    def _pump(self) -> None:
        """Start queued pulls, oldest first, up to `max_concurrent_downloads` of them."""
        if not self._running:
            return
        limit = self._settings().max_concurrent_downloads
        active = sum(job.task is not None for job in self.jobs.values())
        waiting = sorted(
            (j for j in self.jobs.values() if j.entry.state == DownloadState.QUEUED), key=_seq
        )
        for job in waiting[: max(0, limit - active)]:
            job.entry.state = DownloadState.DOWNLOADING
            job.rate.reset(self._monotonic(), job.entry.bytes_done)
            job.task = asyncio.create_task(self._run(job), name=f"ollama-pull-{job.entry.id}")
        self._changes.touch()

    async def _run(self, job: PullJob) -> None:
        entry = job.entry
        try:
            entry.error, entry.note = None, None
            await self._save(job)
            async with (
                self._connect(entry.base_url) as ollama,
                aclosing(ollama.pull_stream(entry.model)) as steps,
            ):
                async for step in steps:
                    await self._progress(job, apply_step(entry, step))
            entry.state, entry.status = DownloadState.DONE, "success"
        except asyncio.CancelledError:
            if job.intent is None:
                entry.state = DownloadState.QUEUED
                raise  # not ours (the loop is going away): let it through
            self._after_stop(job, job.intent)
        except OllamaNotRunningError as exc:
            entry.state, entry.error = DownloadState.FAILED, f"{exc.detail} Then resume the pull."
        except RoundhouseError as exc:
            entry.state, entry.error = DownloadState.FAILED, exc.detail
        except Exception as exc:  # a bug must show as a failed pull, not vanish
            log.exception("Ollama pull %s failed", entry.id)
            entry.state = DownloadState.FAILED
            entry.error = f"The pull failed unexpectedly ({exc}); resume to try again."
        finally:
            job.task, job.intent = None, None
            # Shielded: a pause that lands now must not skip starting the next pull.
            await asyncio.shield(self._after_run(job))

    async def _progress(self, job: PullJob, changed: bool) -> None:
        now = self._monotonic()
        job.rate.add(now, job.entry.bytes_done)
        if changed or now - job.saved_at >= SAVE_EVERY_S:
            job.saved_at = now
            await self._save(job, quiet=True)
        else:
            self._changes.touch()

    def _after_stop(self, job: PullJob, intent: Intent) -> None:
        entry = job.entry
        if intent == Intent.PAUSE:
            entry.state, entry.note = DownloadState.PAUSED, PAUSE_NOTE
        elif intent == Intent.CANCEL:
            entry.state, entry.note = DownloadState.CANCELLED, CANCEL_NOTE
        else:
            entry.state = DownloadState.QUEUED

    async def _after_run(self, job: PullJob) -> None:
        await self._save(job, quiet=True)
        if self._running:
            try:
                await self._prune()
            except RoundhouseError:
                log.exception("Pruning the Ollama pulls failed")
            self._pump()

    async def _stop(self, job: PullJob, intent: Intent) -> None:
        """Cancel the job's task and wait until it has left its entry in a state."""
        task = job.task
        if task is None:
            return
        job.intent = intent
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        if job.task is task:
            # Cancelled before it ever ran (a pause just after the add): its own ending
            # never ran either, so it is done here.
            job.task, job.intent = None, None
            self._after_stop(job, intent)
            await self._after_run(job)

    # -- the book ----------------------------------------------------------------------------

    def _job(self, item_id: str) -> PullJob:
        try:
            return self.jobs[item_id]
        except KeyError:
            raise NotFoundError(
                f"No download has the id {item_id!r}; list them with `roundhouse models downloads`."
            ) from None

    def _new_id(self) -> str:
        while True:
            candidate = OLLAMA_ID_PREFIX + secrets.token_hex(5)
            if candidate not in self.jobs:
                return candidate

    async def _save(self, job: PullJob, *, quiet: bool = False) -> None:
        """Persist the entry and wake followers; `quiet` logs a failed write instead."""
        job.entry.updated_at = self._clock()
        try:
            await self._store.save(job.entry)
        except RoundhouseError:
            if not quiet:
                raise
            log.exception("Saving Ollama pull %s failed", job.entry.id)
        finally:
            self._sync_job(job)
            self._changes.touch()

    def _sync_job(self, job: PullJob) -> None:
        """Copy the pull's state onto its job of the board (at each save)."""
        if self._mirror is None:
            return
        entry = job.entry
        self._mirror.sync(
            entry.id,
            job,
            JOB_STATES[entry.state],
            started_at=entry.created_at,
            fraction=min(1.0, entry.bytes_done / entry.size) if entry.size else None,
            message=entry.status or entry.model,
            error=entry.error,
        )

    async def _prune(self) -> None:
        """Forget the oldest finished pulls beyond the setting's bound."""
        finished = sorted(
            (
                job
                for job in self.jobs.values()
                if job.task is None and job.entry.state not in UNFINISHED_STATES
            ),
            key=lambda job: (job.entry.updated_at, job.entry.seq),
        )
        extra = len(finished) - self._settings().max_finished_downloads
        await self._forget([job.entry.id for job in finished[: max(0, extra)]])

    async def _forget(self, ids: list[str]) -> None:
        if not ids:
            return
        await self._store.delete(ids)
        for item_id in ids:
            self.jobs.pop(item_id, None)
            if self._mirror is not None:
                self._mirror.forget(item_id)
        self._changes.touch()


def _seq(job: PullJob) -> int:
    return job.entry.seq
