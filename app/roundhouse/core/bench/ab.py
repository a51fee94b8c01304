"""A/B: one workload against one model on two engines, back to back, one engine at a time."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from roundhouse.api.bench import (
    AB_ENGINES,
    AbProgress,
    AbRequest,
    BenchProgress,
    BenchResult,
    BenchState,
    ab_engines,
    counts_line,
    loads,
)
from roundhouse.api.engines import EngineId, EnginesOverview, InstanceOptions, ModelFormat
from roundhouse.api.instances import InstanceInfo, InstanceStatus, StartRequest
from roundhouse.api.jobs import JobKind
from roundhouse.core.bench.service import BenchService, bench_state, run_benchmark
from roundhouse.core.bench.serving import serving_context
from roundhouse.core.errors import InvalidInputError, NotFoundError, RoundhouseError
from roundhouse.core.infra.jobs import Job, JobBoard, new_job_id
from roundhouse.core.instances.service import InstanceService

log = logging.getLogger(__name__)
READY_TIMEOUT_S = 600.0
POLL_S = 0.25


@dataclass(frozen=True)
class Arm:
    engine: EngineId
    model: str


def plan_arms(request: AbRequest, overview: EnginesOverview) -> list[Arm]:
    """The engines in order with the model each loads; InvalidInputError says why not."""
    usable = ab_engines(overview)
    arms: list[Arm] = []
    for name in request.engines:
        try:
            engine = EngineId(name)
        except ValueError:
            engine = None
        if engine is None or engine not in AB_ENGINES:
            known = ", ".join(e.value for e in AB_ENGINES)
            raise InvalidInputError(f"An A/B cannot start {name!r}; use one of {known}.")
        if engine not in usable:
            raise InvalidInputError(
                f"{engine.value} is not installed here, so it cannot take part in the A/B. "
                "Install it on the Engines page (or `roundhouse engines install`), "
                "or pick engines that are installed."
            )
        model = request.models.get(engine.value, request.model)
        if model.lower().endswith(".gguf") and not loads(overview, engine, ModelFormat.GGUF):
            raise InvalidInputError(
                f"{engine.value} cannot load a GGUF file. Give it the same model in its own "
                f"format (CLI: --model-for {engine.value}=PATH)."
            )
        arms.append(Arm(engine, model))
    if len(set(arms)) != len(arms):
        raise InvalidInputError("Name each engine once: an A/B compares different engines.")
    return arms


def arm_warning(engine: str, result: BenchResult) -> str:
    """An arm with failures in one line: its counts and its most common reason."""
    m = result.metrics
    line = f"{engine}: {counts_line(m.completed, m.failed)}"
    if m.failure_groups:
        line += f" ({m.failure_groups[0].reason})"
    return line


def _snapshot(job: Job[AbProgress]) -> AbProgress:
    return job.detail.model_copy(
        update={"state": bench_state(job.state), "error": job.error}, deep=True
    )


def _failed(exc: Exception) -> str:
    if isinstance(exc, RoundhouseError):
        return exc.detail
    # A job's failure is shown, not lost.
    log.error("An A/B run failed", exc_info=exc)
    return f"The A/B run failed: {type(exc).__name__}: {exc}"


class AbService:
    """Starts (or reuses) an instance per arm, benchmarks it, stops what it started; each
    run a job of the job board."""

    def __init__(
        self,
        bench: BenchService,
        instances: InstanceService,
        ready_timeout_s: float = READY_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
        *,
        jobs: JobBoard | None = None,
    ) -> None:
        self._bench = bench
        self._instances = instances
        self._ready_timeout_s = ready_timeout_s
        self._clock = clock
        # The daemon's one board; a board of its own when used alone.
        self._board = jobs if jobs is not None else JobBoard()

    def start(self, request: AbRequest, arms: list[Arm]) -> AbProgress:
        job_id = new_job_id()

        async def run(job: Job[AbProgress]) -> None:
            for arm in arms:
                await self._run_arm(job, request, arm)
            job.detail.stage = "done"

        progress = AbProgress(id=job_id, state=BenchState.RUNNING)
        job = self._board.start(JobKind.AB, progress, run, failed=_failed, job_id=job_id)
        job.snapshot = lambda: _snapshot(job)
        return _snapshot(job)

    def progress(self, job_id: str) -> AbProgress:
        job = self._board.find(job_id, JobKind.AB)
        if job is None:
            raise NotFoundError(f"There is no A/B run {job_id!r} (they are not kept on disk).")
        return _snapshot(job)

    def cancel(self, job_id: str) -> AbProgress:
        job = self._board.find(job_id, JobKind.AB)
        if job is None or job.task is None:
            raise NotFoundError(f"There is no A/B run {job_id!r}.")
        job.task.cancel()
        return _snapshot(job)

    async def aclose(self) -> None:
        for job in self._board.jobs(JobKind.AB):
            await self._board.cancel(job)

    async def _run_arm(self, job: Job[AbProgress], request: AbRequest, arm: Arm) -> None:
        progress = job.detail
        progress.stage = f"starting {arm.engine.value}"
        progress.done, progress.total = 0, request.workload.num_prompts
        job.update(message=progress.stage)
        info, ours = await self._instance(arm, request.ctx_size)
        try:
            progress.stage = f"benchmarking {arm.engine.value}"
            job.update(message=progress.stage)
            label = f"{request.workload.label or 'A/B'} · {arm.engine.value}"
            workload = request.workload.model_copy(
                update={"model": info.models[0] if info.models else arm.model, "label": label}
            )
            follow = BenchProgress(id=uuid.uuid4().hex[:12], state=BenchState.RUNNING)
            # Straight to the engine, so each arm is measured without the gateway: with the
            # key Roundhouse started it with (ADR 21).
            key = await self._instances.upstream_key(info.id) or ""
            serving = await serving_context(info, key)

            def advanced() -> None:
                progress.done, progress.failed = follow.done, follow.failed
                job.update(fraction=follow.done / follow.total if follow.total else None)

            result = await run_benchmark(workload, info.base_url, key, follow, serving, advanced)
            result = result.model_copy(update={"engine": arm.engine.value})
            await asyncio.to_thread(self._bench.keep, result)
            progress.result_ids.append(result.id)
            progress.done, progress.failed = follow.done, follow.failed
            if result.metrics.failed:
                progress.warnings.append(arm_warning(arm.engine.value, result))
            job.touch()
        finally:
            if ours:
                # Stopped before the next arm starts: both never hold memory at once.
                progress.stage = f"stopping {arm.engine.value}"
                job.update(message=progress.stage)
                await asyncio.shield(self._instances.stop(info.id))

    async def _instance(self, arm: Arm, ctx_size: int) -> tuple[InstanceInfo, bool]:
        """A ready instance of the arm's engine and model: a running one, else a new one."""
        for info in self._instances.all(memory=False):
            ready = info.status is InstanceStatus.READY
            if ready and info.engine is arm.engine and info.model == arm.model:
                return info, False
        # mlx_lm.server takes no context size: it uses the model's own.
        ctx = None if arm.engine is EngineId.MLX else ctx_size
        options = InstanceOptions(model=arm.model, ctx_size=ctx)
        started = await self._instances.start(StartRequest(engine=arm.engine, options=options))
        deadline = self._clock() + self._ready_timeout_s
        try:
            while True:
                info = self._instances.info(started.id, memory=False)
                if info.status is InstanceStatus.READY:
                    return info, True
                if info.status is InstanceStatus.FAILED:
                    raise InvalidInputError(
                        f"{arm.engine.value} could not start {arm.model}: "
                        f"{info.error or 'see its log on the Engines page'}"
                    )
                if self._clock() > deadline:
                    raise InvalidInputError(
                        f"{arm.engine.value} was not ready after {self._ready_timeout_s:.0f} s."
                    )
                await asyncio.sleep(POLL_S)
        except BaseException:
            await asyncio.shield(self._instances.stop(started.id))
            raise
