"""One job system: jobs with a kind, a state, progress, cancel and followers, on one board.

A job is either run by the board (`JobBoard.start`: the board owns its task, and the
task's end sets the state) or driven by its owner (`JobBoard.add`: a queue with its own
scheduling, such as the downloads, moves it between states). Either way each change wakes
the job's followers and every listener of the board (the change feed is one).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from roundhouse.api.jobs import ENDED_STATES, JobKind, JobList, JobState, JobView
from roundhouse.base.tasks import cancel_and_wait
from roundhouse.core.infra.changes import Changes

log = logging.getLogger(__name__)

P = TypeVar("P")
Listener = Callable[["Job[Any]"], None]
Clock = Callable[[], float]
# Finished jobs each kind keeps (the oldest go); a kind that keeps its own history on
# disk (downloads, benchmarks) still finds its running and recent jobs here.
KEEP_FINISHED = 20

# Moves a job may make; an ended job comes back only through `requeue` (a resume).
_NEXT: dict[JobState, frozenset[JobState]] = {
    JobState.QUEUED: frozenset({JobState.RUNNING, *ENDED_STATES}),
    # Back to queued: a running download paused, or put back when the daemon stops.
    JobState.RUNNING: frozenset({JobState.QUEUED, *ENDED_STATES}),
    JobState.DONE: frozenset(),
    JobState.FAILED: frozenset(),
    JobState.CANCELLED: frozenset(),
}


class JobStateError(RuntimeError):
    """A move the state machine does not allow (a bug in the job's owner)."""


class Job(Generic[P]):
    """One job: `detail` is its kind's own progress (the owner's shape on its routes)."""

    def __init__(
        self,
        board: JobBoard,
        job_id: str,
        kind: JobKind,
        detail: P,
        state: JobState,
        started_at: float,
    ) -> None:
        self.id = job_id
        self.kind = kind
        self.detail = detail
        self.state = state
        self.started_at = started_at
        self.ended_at: float | None = None
        self.fraction: float | None = None
        self.message = ""
        self.error: str | None = None
        self.result: object = None
        self.task: asyncio.Task[None] | None = None
        # A job the board does not run is cancelled by its owner.
        self.canceller: Callable[[], Awaitable[object]] | None = None
        # The job in its kind's own wire shape, for the generic view's `detail`.
        self.snapshot: Callable[[], BaseModel] | None = None
        self.changes = Changes()
        self._board = board

    @property
    def ended(self) -> bool:
        return self.state in ENDED_STATES

    @property
    def version(self) -> int:
        return self.changes.version

    def touch(self) -> None:
        """Wake the followers and the board's listeners: something about the job changed."""
        self.changes.touch()
        self._board.changed(self)

    def update(
        self,
        *,
        fraction: float | None = None,
        message: str | None = None,
    ) -> None:
        """Progress: how much is done (0 to 1) and what it does now, then a touch."""
        if fraction is not None:
            self.fraction = min(1.0, max(0.0, fraction))
        if message is not None:
            self.message = message
        self.touch()

    def move(self, state: JobState, *, error: str | None = None) -> None:
        """Into `state` (JobStateError for a move the machine forbids), then a touch."""
        if state != self.state:
            if state not in _NEXT[self.state]:
                raise JobStateError(
                    f"job {self.id} ({self.kind.value}) cannot go from {self.state.value} "
                    f"to {state.value}"
                )
            self.state = state
            self.ended_at = self._board.clock() if state in ENDED_STATES else None
        if error is not None:
            self.error = error
        elif state not in ENDED_STATES:
            self.error = None
        self.touch()
        if self.ended:
            self._board.trim(self.kind)

    def requeue(self) -> None:
        """An ended job waits again (a resumed download): its error and end are cleared."""
        self.state, self.ended_at, self.error = JobState.QUEUED, None, None
        self.touch()

    async def wait(self, seen: int, timeout_s: float) -> int:
        """The job's version once it differs from `seen`, or after `timeout_s`; at once for
        an ended job (nothing more will come)."""
        if self.ended:
            return self.version
        return await self.changes.wait(seen, timeout_s)

    def view(self, *, detail: bool = True) -> JobView:
        """The generic view; with `detail`, the kind's own shape inside it."""
        shape = self.snapshot() if detail and self.snapshot is not None else None
        return JobView(
            id=self.id,
            kind=self.kind,
            state=self.state,
            started_at=self.started_at,
            ended_at=self.ended_at,
            fraction=self.fraction,
            message=self.message,
            error=self.error,
            detail=shape.model_dump(mode="json") if shape is not None else None,
        )


class JobBoard:
    """Every job of the daemon, by id: started, cancelled, followed, heard by listeners;
    `keep_finished` ended jobs of each kind are kept, the oldest forgotten."""

    def __init__(self, *, keep_finished: int = KEEP_FINISHED, clock: Clock = time.time) -> None:
        self.clock = clock
        self.keep_finished = keep_finished
        # Touched on every change of any job: for followers of the whole board.
        self.changes = Changes()
        self._jobs: dict[str, Job[Any]] = {}
        self._listeners: list[Listener] = []

    # -- listening ---------------------------------------------------------------------------

    def listen(self, callback: Listener) -> Callable[[], None]:
        """Call `callback(job)` after every change of any job (in the loop's thread, at
        once: keep it short); returns the function that stops it."""
        self._listeners.append(callback)

        def stop() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return stop

    def changed(self, job: Job[Any]) -> None:
        self.changes.touch()
        for callback in list(self._listeners):
            try:
                callback(job)
            except Exception:  # a listener's bug must not stop the job
                log.exception("A listener of the job board failed on job %s", job.id)

    # -- adding ------------------------------------------------------------------------------

    def add(
        self,
        kind: JobKind,
        detail: P,
        *,
        job_id: str | None = None,
        state: JobState = JobState.QUEUED,
        started_at: float | None = None,
        canceller: Callable[[], Awaitable[object]] | None = None,
    ) -> Job[P]:
        """A job its owner drives with `move` and `update`; `canceller` stops it."""
        job_id = job_id or new_job_id()
        if job_id in self._jobs:
            raise JobStateError(f"the job board holds a job {job_id} already")
        start = self.clock() if started_at is None else started_at
        job = Job(self, job_id, kind, detail, state, start)
        if job.ended:
            job.ended_at = start
        job.canceller = canceller
        self._jobs[job_id] = job
        job.touch()
        self.trim(kind)
        return job

    def start(
        self,
        kind: JobKind,
        detail: P,
        run: Callable[[Job[P]], Awaitable[object]],
        *,
        failed: Callable[[Exception], str],
        job_id: str | None = None,
    ) -> Job[P]:
        """A job the board runs now: `run(job)`'s return is its result and makes it done
        (unless `run` ended it itself); an exception fails it, in the words `failed` gives;
        a cancel leaves it cancelled (with any error `run` set on the way out)."""
        job = self.add(kind, detail, job_id=job_id, state=JobState.RUNNING)
        job.task = asyncio.create_task(self._run(job, run, failed), name=f"{kind.value}-{job.id}")
        return job

    async def _run(
        self,
        job: Job[P],
        run: Callable[[Job[P]], Awaitable[object]],
        failed: Callable[[Exception], str],
    ) -> None:
        try:
            job.result = await run(job)
            if not job.ended:
                job.move(JobState.DONE)
        except asyncio.CancelledError:
            if not job.ended:
                job.move(JobState.CANCELLED)
            raise
        except Exception as exc:  # noqa: BLE001 - shown as a failed job; `failed` logs a bug
            if not job.ended:
                job.move(JobState.FAILED, error=failed(exc))

    # -- reads -------------------------------------------------------------------------------

    def find(self, job_id: str, kind: JobKind | None = None) -> Job[Any] | None:
        """The job, or None (each owner says in its own words that there is none)."""
        job = self._jobs.get(job_id)
        if job is None or (kind is not None and job.kind != kind):
            return None
        return job

    def jobs(self, kind: JobKind | None = None) -> list[Job[Any]]:
        """The jobs (of `kind`), the oldest first."""
        found = [j for j in self._jobs.values() if kind is None or j.kind == kind]
        return sorted(found, key=lambda j: j.started_at)

    def listing(self, kind: JobKind | None = None) -> JobList:
        """The jobs (of `kind`) as the wire shows them, the oldest first."""
        return JobList(jobs=[job.view() for job in self.jobs(kind)])

    # -- ending ------------------------------------------------------------------------------

    async def cancel(self, job: Job[Any]) -> None:
        """Stop the job and return once it has ended (a queued job never runs)."""
        if job.ended:
            return
        if job.task is not None and not job.task.done():
            await cancel_and_wait(job.task)
        elif job.canceller is not None:
            await job.canceller()
        elif not job.ended:
            job.move(JobState.CANCELLED)

    def forget(self, job_id: str) -> None:
        """Drop a job from the board (its owner removed it); a running one is left running.
        Listeners hear it with the job, which the board no longer lists."""
        job = self._jobs.pop(job_id, None)
        if job is not None:
            self.changed(job)

    def trim(self, kind: JobKind) -> None:
        ended = [j for j in self._jobs.values() if j.kind == kind and j.ended]
        ended.sort(key=lambda j: (j.ended_at or 0.0, j.started_at))
        for old in ended[: max(0, len(ended) - self.keep_finished)]:
            self._jobs.pop(old.id, None)

    async def close(self) -> None:
        """Cancel every job the board runs and wait for each to end."""
        running = [j for j in self._jobs.values() if j.task is not None and not j.task.done()]
        for job in running:
            assert job.task is not None
            await cancel_and_wait(job.task, reraise=False)


def new_job_id() -> str:
    """12 hex digits: safe in a URL and a shell."""
    return uuid.uuid4().hex[:12]


class JobMirror(Generic[P]):
    """Jobs whose owner keeps the records (a queue saved on disk, with its own states and
    scheduling): each record's state is copied onto the board as it changes, so the board
    and its listeners see these jobs as they see any other."""

    def __init__(
        self,
        board: JobBoard,
        kind: JobKind,
        *,
        snapshot: Callable[[P], BaseModel],
        cancel: Callable[[str], Awaitable[object]],
    ) -> None:
        self._board = board
        self._kind = kind
        self._snapshot = snapshot
        self._cancel = cancel

    def sync(
        self,
        job_id: str,
        detail: P,
        state: JobState,
        *,
        started_at: float,
        fraction: float | None = None,
        message: str = "",
        error: str | None = None,
    ) -> Job[P]:
        """The record's job, made or moved to `state`; a record that leaves an ended state
        (resumed, or cancelled after it failed) is a new run: a new job under its id."""
        job: Job[P] | None = self._board.find(job_id, self._kind)
        if job is not None and job.ended and state != job.state:
            self._board.forget(job_id)
            job = None
        if job is None:
            job = self._board.add(
                self._kind,
                detail,
                job_id=job_id,
                state=state,
                started_at=started_at,
                canceller=lambda: self._cancel(job_id),
            )
            job.snapshot = lambda: self._snapshot(detail)
        job.detail = detail
        job.fraction, job.message = fraction, message
        if state != job.state:
            job.move(state, error=error)
        else:
            job.error = error if job.ended else None
            job.touch()
        return job

    def forget(self, job_id: str) -> None:
        """The owner dropped the record."""
        if self._board.find(job_id, self._kind) is not None:
            self._board.forget(job_id)
