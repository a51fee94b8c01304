"""Installs as jobs of the daemon's job board: started, followed, cancelled, kept a while."""

from __future__ import annotations

import asyncio
import logging
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
    ManagedVenv,
)
from roundhouse.api.jobs import JobKind, JobState
from roundhouse.core.engines.exo import NOT_STARTED_HERE
from roundhouse.core.engines.install.errors import InstallBusyError
from roundhouse.core.engines.install.llamacpp import install_llamacpp, plan_llamacpp_install
from roundhouse.core.engines.install.venvs import (
    PipPlan,
    install_python_engine,
    plan_python_engine,
)
from roundhouse.core.errors import InvalidInputError, NotFoundError, RoundhouseError
from roundhouse.core.infra.jobs import Job, JobBoard

log = logging.getLogger(__name__)

PYTHON_ENGINES = (EngineId.MLX, EngineId.VLLM, EngineId.SGLANG)
MAX_LINES = 200
MAX_FINISHED_KEPT = 20


@dataclass
class _Install:
    """What an install job knows besides its state: its job's detail on the board."""

    engine: EngineId
    progress: InstallProgress | None = None
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_LINES))
    line_count: int = 0
    plan: str | None = None
    build: InstalledBuild | None = None
    venv: ManagedVenv | None = None


def _snapshot(job: Job[_Install]) -> InstallJob:
    install = job.detail
    return InstallJob(
        id=job.id,
        engine=install.engine,
        state=job.state,
        started_at=job.started_at,
        ended_at=job.ended_at,
        progress=install.progress,
        lines=list(install.lines),
        line_count=install.line_count,
        plan=install.plan,
        error=job.error,
        build=install.build,
        venv=install.venv,
    )


def _failed(exc: Exception) -> str:
    if isinstance(exc, RoundhouseError):
        return exc.detail
    # A bug must show as a failed job, not vanish.
    log.error("An install job failed", exc_info=exc)
    return f"The install failed unexpectedly: {exc}"


class InstallJobs:
    """One install per engine at a time, each a job of the board; `on_installed` runs after
    each success (the daemon detects engines again then)."""

    def __init__(
        self,
        engines_dir: Path,
        inventory: Callable[[], Awaitable[HardwareInventory]],
        on_installed: Callable[[], Awaitable[object]],
        *,
        jobs: JobBoard | None = None,
        releases_url: str | None = None,
        pins_dir: Path | None = None,
    ) -> None:
        self._engines_dir = engines_dir
        self._inventory = inventory
        self._on_installed = on_installed
        self._releases_url = releases_url
        # None: $ROUNDHOUSE_ENGINE_PINS, else the pins this release ships.
        self._pins_dir = pins_dir
        # The daemon's one board; a board of its own when used alone (tests, tools).
        self._board = jobs if jobs is not None else JobBoard(keep_finished=MAX_FINISHED_KEPT)

    def start(self, engine: EngineId, request: InstallRequest) -> InstallJob:
        if engine == EngineId.OLLAMA:
            raise InvalidInputError(
                "Roundhouse does not install Ollama: use Ollama's own installer "
                "(https://ollama.com/download), then Roundhouse finds it."
            )
        if engine == EngineId.EXO:
            raise InvalidInputError(NOT_STARTED_HERE)
        if engine not in (EngineId.LLAMA_CPP, *PYTHON_ENGINES):
            raise InvalidInputError(f"{engine.value} is not something Roundhouse installs.")
        if engine == EngineId.LLAMA_CPP and request.version is not None:
            raise InvalidInputError(
                "A llama.cpp build is chosen by its release tag, not a version."
            )
        for job in self._jobs():
            if job.detail.engine == engine and job.state == JobState.RUNNING:
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
        install = _Install(engine, plan=pip_plan.summary if pip_plan is not None else None)

        async def run(job: Job[_Install]) -> None:
            await self._run(job, request, pip_plan)

        job = self._board.start(JobKind.INSTALL, install, run, failed=_failed)
        job.snapshot = lambda: _snapshot(job)
        return _snapshot(job)

    def get(self, job_id: str) -> InstallJob:
        return _snapshot(self._job(job_id))

    def all(self) -> list[InstallJob]:
        return [_snapshot(job) for job in self._jobs()]

    def version(self, job_id: str) -> int:
        return self._job(job_id).version

    async def wait_change(self, job_id: str, seen: int, timeout_s: float) -> tuple[InstallJob, int]:
        """The job once it changed after version `seen` (or after `timeout_s`), with its
        version: for streams that follow it."""
        job = self._job(job_id)
        version = await job.wait(seen, timeout_s)
        return _snapshot(job), version

    async def cancel(self, job_id: str) -> InstallJob:
        job = self._job(job_id)
        await self._board.cancel(job)
        return _snapshot(job)

    async def close(self) -> None:
        for job in self._jobs():
            if job.state == JobState.RUNNING:
                await self._board.cancel(job)

    def _jobs(self) -> list[Job[_Install]]:
        return self._board.jobs(JobKind.INSTALL)

    def _job(self, job_id: str) -> Job[_Install]:
        job = self._board.find(job_id, JobKind.INSTALL)
        if job is None:
            raise NotFoundError(f"No install job has the id {job_id!r}.")
        return job

    def _progress(self, job: Job[_Install], event: InstallProgress) -> None:
        install = job.detail
        install.progress = event
        if event.line is not None:
            install.lines.append(event.line)
            install.line_count += 1
        fraction = None
        if event.total_bytes and event.done_bytes is not None:
            fraction = event.done_bytes / event.total_bytes
        job.update(fraction=fraction, message=event.message)

    async def _run(
        self, job: Job[_Install], request: InstallRequest, pip_plan: PipPlan | None
    ) -> None:
        install = job.detail
        try:
            if pip_plan is None:
                inventory = await self._inventory()
                plan = await plan_llamacpp_install(
                    inventory,
                    tag=request.tag,
                    prefer=request.backend,
                    releases_url=self._releases_url,
                )
                install.plan = (
                    f"{plan.release.tag}: {plan.choice.asset.name} ({plan.choice.reason})"
                )
                job.touch()
                install.build = await install_llamacpp(
                    self._engines_dir,
                    plan,
                    on_progress=lambda e: self._progress(job, e),
                    allow_unverified=request.unverified,
                )
            else:
                install.venv = await install_python_engine(
                    install.engine,
                    self._engines_dir,
                    plan=pip_plan,
                    python=request.python,
                    on_progress=lambda e: self._progress(job, e),
                )
        except asyncio.CancelledError:
            job.error = "Cancelled; a llama.cpp download resumes where it stopped."
            raise
        # Detected before the job is done: a follower that sees it done finds the engine.
        try:
            await self._on_installed()
        except Exception:
            log.exception("Detecting engines after an install failed")
