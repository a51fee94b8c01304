"""Benchmarks as jobs of the job board: start, follow, keep the results as JSON, list, delete."""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from roundhouse.api.bench import (
    BenchList,
    BenchProgress,
    BenchRequest,
    BenchResult,
    BenchState,
    BenchStatus,
    BenchSummary,
    ServingContext,
    failure_lines,
)
from roundhouse.api.jobs import JobKind, JobState
from roundhouse.core.bench.failures import advice, group_failures, with_groups
from roundhouse.core.bench.runner import Target, new_session, run_requests, warm_up
from roundhouse.core.errors import NotFoundError, RoundhouseError
from roundhouse.core.infra.jobs import Job, JobBoard, new_job_id

if TYPE_CHECKING:
    from roundhouse.core.bench.workloads import Prompt

log = logging.getLogger(__name__)
_ID = re.compile(r"^[0-9a-f]{12}$")
# Results kept on disk; the oldest go beyond this.
MAX_RESULTS = 500


def bench_state(state: JobState) -> BenchState:
    """A job's state as a benchmark says it (a benchmark runs at once: never queued)."""
    return BenchState.RUNNING if state == JobState.QUEUED else BenchState(state.value)


def _snapshot(job: Job[BenchProgress]) -> BenchProgress:
    return job.detail.model_copy(
        update={"state": bench_state(job.state), "error": job.error}, deep=True
    )


def _failed(exc: Exception) -> str:
    if isinstance(exc, RoundhouseError):
        return exc.detail
    # A job's failure is shown, not lost.
    log.error("A benchmark failed", exc_info=exc)
    return f"The benchmark failed: {type(exc).__name__}: {exc}"


def build_prompts(request: BenchRequest) -> list[Prompt]:
    # The numeric modules (numpy, 11 MB) load with the first benchmark, not in every daemon.
    from roundhouse.core.bench.workloads import random_prompts, sharegpt_prompts

    if request.prompts_jsonl is not None:
        return sharegpt_prompts(request.prompts_jsonl, request.num_prompts)
    return random_prompts(
        request.num_prompts,
        request.input_len,
        request.output_len,
        ratio=request.range_ratio,
        seed=request.seed,
        convention=request.convention,
    )


async def run_benchmark(
    request: BenchRequest,
    base_url: str,
    api_key: str,
    progress: BenchProgress | None = None,
    serving: ServingContext | None = None,
    on_change: Callable[[], None] | None = None,
) -> BenchResult:
    """Warm up, then run the whole benchmark against `base_url` (ending in /v1); the
    failures are grouped by reason, with advice naming `serving`'s context where known.
    `on_change` is called after each request that moves `progress`."""
    from roundhouse.core.bench.arrivals import poisson_offsets
    from roundhouse.core.bench.metrics import compute_metrics

    prompts = build_prompts(request)
    target = Target(
        base_url, api_key, request.model, request.endpoint, request.ignore_eos, request.timeout_s
    )
    offsets = poisson_offsets(len(prompts), request.request_rate, request.seed, request.convention)

    def advance(done: int, total: int, failed: int) -> None:
        if progress is not None:
            progress.done, progress.total, progress.failed = done, total, failed
        if on_change is not None:
            on_change()

    async with new_session(request.max_concurrency or len(prompts)) as session:
        await warm_up(
            session,
            target,
            prompts[: request.warmups],
            lambda reason: advice(reason, request, serving),
        )
        records, duration = await run_requests(
            session, target, prompts, offsets, request.max_concurrency, advance
        )
    metrics = compute_metrics(records, duration, request.convention, request.slos)
    errors = [r.error for r in records if r.error is not None]
    metrics.failure_groups = group_failures(errors, request, serving)
    result_id = progress.id if progress is not None else uuid.uuid4().hex[:12]
    return BenchResult(
        id=result_id, created_at=time.time(), request=request, serving=serving, metrics=metrics
    )


def _failed_run(result: BenchResult) -> str:
    """A run whose requests all failed, in words: why, what to change, where it is kept."""
    lines = failure_lines(result)
    lines.append(f"The run is kept as failed: `roundhouse bench show {result.id}`.")
    return "\n".join(lines)


class BenchService:
    """Runs benchmarks through the daemon's own gateway, each a job of the job board, and
    keeps their results."""

    def __init__(
        self, folder: Path, gateway_url: str, api_key: str, *, jobs: JobBoard | None = None
    ) -> None:
        self.folder = folder
        self.gateway_url = gateway_url
        self.api_key = api_key
        # The daemon's one board; a board of its own when used alone.
        self._board = jobs if jobs is not None else JobBoard()

    def start(
        self,
        request: BenchRequest,
        engine: str | None = None,
        serving: ServingContext | None = None,
    ) -> BenchProgress:
        job_id = new_job_id()
        progress = BenchProgress(id=job_id, state=BenchState.RUNNING, total=request.num_prompts)

        async def run(job: Job[BenchProgress]) -> None:
            await self._run(job, request, engine, serving)

        job = self._board.start(JobKind.BENCH, progress, run, failed=_failed, job_id=job_id)
        job.snapshot = lambda: _snapshot(job)
        return _snapshot(job)

    async def _run(
        self,
        job: Job[BenchProgress],
        request: BenchRequest,
        engine: str | None,
        serving: ServingContext | None,
    ) -> None:
        progress = job.detail

        def advanced() -> None:
            job.update(fraction=progress.done / progress.total if progress.total else None)

        result = await run_benchmark(
            request, self.gateway_url, self.api_key, progress, serving, advanced
        )
        result = result.model_copy(update={"engine": engine})
        await asyncio.to_thread(self._save, result)
        progress.kept = True
        if result.status is BenchStatus.FAILED:
            # Kept, to be seen with its reasons, but the job failed: it has no figures.
            job.move(JobState.FAILED, error=_failed_run(result))

    def progress(self, job_id: str) -> BenchProgress:
        job = self._board.find(job_id, JobKind.BENCH)
        if job is not None:
            return _snapshot(job)
        if self._path(job_id).exists():
            kept = self.result(job_id)
            m = kept.metrics
            state = BenchState.FAILED if kept.status is BenchStatus.FAILED else BenchState.DONE
            error = _failed_run(kept) if state is BenchState.FAILED else None
            done = m.completed + m.failed
            return BenchProgress(
                id=job_id,
                state=state,
                done=done,
                total=done,
                failed=m.failed,
                kept=True,
                error=error,
            )
        raise NotFoundError(
            f"There is no benchmark {job_id!r}. List them with `roundhouse bench ls`."
        )

    def cancel(self, job_id: str) -> BenchProgress:
        job = self._board.find(job_id, JobKind.BENCH)
        if job is None or job.task is None:
            raise NotFoundError(f"There is no running benchmark {job_id!r}.")
        job.task.cancel()
        return _snapshot(job)

    async def aclose(self) -> None:
        for job in self._board.jobs(JobKind.BENCH):
            await self._board.cancel(job)

    def _path(self, result_id: str) -> Path:
        if not _ID.match(result_id):
            raise NotFoundError(f"{result_id!r} is not a benchmark id (12 hex digits).")
        return self.folder / f"{result_id}.json"

    def keep(self, result: BenchResult) -> None:
        """Keep a result run elsewhere (an A/B arm) with the others; blocking file I/O."""
        self._save(result)

    def _save(self, result: BenchResult) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(result.id)
        partial = path.with_suffix(".part")
        partial.write_text(result.model_dump_json(indent=2), encoding="utf-8")
        partial.replace(path)
        files = sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in files[:-MAX_RESULTS]:
            old.unlink(missing_ok=True)

    def result(self, result_id: str) -> BenchResult:
        path = self._path(result_id)
        try:
            return with_groups(BenchResult.model_validate_json(path.read_text(encoding="utf-8")))
        except FileNotFoundError as exc:
            raise NotFoundError(
                f"There is no finished benchmark {result_id!r}. "
                "List them with `roundhouse bench ls`."
            ) from exc

    def results(self) -> BenchList:
        summaries = []
        for path in self.folder.glob("*.json") if self.folder.is_dir() else []:
            try:
                r = with_groups(BenchResult.model_validate_json(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                log.warning("skipping unreadable benchmark result %s", path)
                continue
            summaries.append(
                BenchSummary(
                    id=r.id,
                    created_at=r.created_at,
                    model=r.request.model,
                    label=r.request.label,
                    engine=r.engine,
                    num_prompts=r.request.num_prompts,
                    convention=r.metrics.convention,
                    output_throughput=r.metrics.output_throughput,
                    ttft_median_ms=r.metrics.ttft.median,
                    completed=r.metrics.completed,
                    failed=r.metrics.failed,
                    status=r.status,
                    reasons=[g.reason for g in r.metrics.failure_groups],
                )
            )
        summaries.sort(key=lambda s: s.created_at, reverse=True)
        return BenchList(results=summaries)

    def delete(self, result_id: str) -> None:
        path = self._path(result_id)
        if not path.exists():
            raise NotFoundError(f"There is no benchmark result {result_id!r}.")
        path.unlink()
        self._board.forget(result_id)
