"""Installs as background jobs of the daemon: started, followed, cancelled, kept a while."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from roundhouse.api.engines import EngineId
from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.installs import (
    InstalledBuild,
    InstallJob,
    InstallProgress,
    InstallRequest,
    JobState,
    ManagedVenv,
)
from roundhouse.base.tasks import cancel_and_wait
from roundhouse.core.engines.install.errors import InstallBusyError
from roundhouse.core.engines.install.llamacpp import install_llamacpp, plan_llamacpp_install
from roundhouse.core.engines.install.venvs import (
    PipPlan,
    install_python_engine,
    plan_python_engine,
)
from roundhouse.core.errors import InvalidInputError, NotFoundError, RoundhouseError

log = logging.getLogger(__name__)

PYTHON_ENGINES = (EngineId.MLX, EngineId.VLLM, EngineId.SGLANG)
MAX_LINES = 200
MAX_FINISHED_KEPT = 20


@dataclass
class _Job:
    id: str
    engine: EngineId
    started_at: float
    state: JobState = JobState.RUNNING
    ended_at: float | None = None
    progress: InstallProgress | None = None
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_LINES))
    line_count: int = 0
    plan: str | None = None
    error: str | None = None
    build: InstalledBuild | None = None
    venv: ManagedVenv | None = None
    task: asyncio.Task[None] | None = None
    # Followers wait on `changed`; each change sets it and puts a fresh one in its place,
    # and `version` counts changes so that none is missed between two waits.
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    version: int = 0

    def touch(self) -> None:
        self.version += 1
        self.changed.set()
        self.changed = asyncio.Event()

    def snapshot(self) -> InstallJob:
        return InstallJob(
            id=self.id,
            engine=self.engine,
            state=self.state,
            started_at=self.started_at,
            ended_at=self.ended_at,
            progress=self.progress,
            lines=list(self.lines),
            line_count=self.line_count,
            plan=self.plan,
            error=self.error,
            build=self.build,
            venv=self.venv,
        )


class InstallJobs:
    """One install per engine at a time; `on_installed` runs after each success (the
    daemon detects engines again then)."""

    def __init__(
        self,
        engines_dir: Path,
        inventory: Callable[[], Awaitable[HardwareInventory]],
        on_installed: Callable[[], Awaitable[object]],
        *,
        releases_url: str | None = None,
        pins_dir: Path | None = None,
    ) -> None:
        self._engines_dir = engines_dir
        self._inventory = inventory
        self._on_installed = on_installed
        self._releases_url = releases_url
        # None: $ROUNDHOUSE_ENGINE_PINS, else the pins this release ships.
        self._pins_dir = pins_dir
        self._jobs: dict[str, _Job] = {}

    def start(self, engine: EngineId, request: InstallRequest) -> InstallJob:
        if engine == EngineId.OLLAMA:
            raise InvalidInputError(
                "Roundhouse does not install Ollama: use Ollama's own installer "
                "(https://ollama.com/download), then Roundhouse finds it."
            )
        if engine not in (EngineId.LLAMA_CPP, *PYTHON_ENGINES):
            raise InvalidInputError(f"{engine.value} is not something Roundhouse installs.")
        if engine == EngineId.LLAMA_CPP and request.version is not None:
            raise InvalidInputError(
                "A llama.cpp build is chosen by its release tag, not a version."
            )
        for job in self._jobs.values():
            if job.engine == engine and job.state == JobState.RUNNING:
                raise InstallBusyError(
                    f"{engine.value} is being installed already (job {job.id}); wait for it "
                    "or cancel it."
                )
        # Planned now: a version that is not pinned is refused before any job starts.
        pip_plan = (
            None
            if engine == EngineId.LLAMA_CPP
            else plan_python_engine(
                engine,
                version=request.version,
                unverified=request.unverified,
                pins_dir=self._pins_dir,
            )
        )
        job = _Job(id=uuid.uuid4().hex[:12], engine=engine, started_at=time.time())
        job.plan = pip_plan.summary if pip_plan is not None else None
        self._jobs[job.id] = job
        job.task = asyncio.create_task(self._run(job, request, pip_plan), name=f"install-{job.id}")
        self._trim()
        return job.snapshot()

    def get(self, job_id: str) -> InstallJob:
        return self._job(job_id).snapshot()

    def all(self) -> list[InstallJob]:
        return [j.snapshot() for j in sorted(self._jobs.values(), key=lambda j: j.started_at)]

    def version(self, job_id: str) -> int:
        return self._job(job_id).version

    async def wait_change(self, job_id: str, seen: int, timeout_s: float) -> tuple[InstallJob, int]:
        """The job once it changed after version `seen` (or after `timeout_s`), with its
        version: for streams that follow it."""
        job = self._job(job_id)
        if job.version == seen and job.state == JobState.RUNNING:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(job.changed.wait(), timeout_s)
        return job.snapshot(), job.version

    async def cancel(self, job_id: str) -> InstallJob:
        job = self._job(job_id)
        if job.task is not None and not job.task.done():
            await cancel_and_wait(job.task)
        return job.snapshot()

    async def close(self) -> None:
        for job in list(self._jobs.values()):
            if job.state == JobState.RUNNING:
                await self.cancel(job.id)

    def _job(self, job_id: str) -> _Job:
        try:
            return self._jobs[job_id]
        except KeyError:
            raise NotFoundError(f"No install job has the id {job_id!r}.") from None

    def _progress(self, job: _Job, event: InstallProgress) -> None:
        job.progress = event
        if event.line is not None:
            job.lines.append(event.line)
            job.line_count += 1
        job.touch()

    async def _run(self, job: _Job, request: InstallRequest, pip_plan: PipPlan | None) -> None:
        try:
            if pip_plan is None:
                inventory = await self._inventory()
                plan = await plan_llamacpp_install(
                    inventory,
                    tag=request.tag,
                    prefer=request.backend,
                    releases_url=self._releases_url,
                )
                job.plan = f"{plan.release.tag}: {plan.choice.asset.name} ({plan.choice.reason})"
                job.touch()
                job.build = await install_llamacpp(
                    self._engines_dir,
                    plan,
                    on_progress=lambda e: self._progress(job, e),
                    allow_unverified=request.unverified,
                )
            else:
                job.venv = await install_python_engine(
                    job.engine,
                    self._engines_dir,
                    plan=pip_plan,
                    python=request.python,
                    on_progress=lambda e: self._progress(job, e),
                )
            job.state = JobState.DONE
            try:
                await self._on_installed()
            except Exception:
                log.exception("Detecting engines after an install failed")
        except asyncio.CancelledError:
            job.state = JobState.CANCELLED
            job.error = "Cancelled; a llama.cpp download resumes where it stopped."
            raise
        except RoundhouseError as exc:
            job.state = JobState.FAILED
            job.error = exc.detail
        except Exception as exc:  # a bug must show as a failed job, not vanish
            log.exception("Install job %s failed", job.id)
            job.state = JobState.FAILED
            job.error = f"The install failed unexpectedly: {exc}"
        finally:
            job.ended_at = time.time()
            job.touch()

    def _trim(self) -> None:
        finished = [j for j in self._jobs.values() if j.state != JobState.RUNNING]
        finished.sort(key=lambda j: j.started_at)
        for old in finished[:-MAX_FINISHED_KEPT]:
            self._jobs.pop(old.id, None)
