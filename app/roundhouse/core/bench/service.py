"""Benchmarks as daemon jobs: start, follow, keep the results as JSON files, list, delete."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import uuid
from dataclasses import dataclass
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
from roundhouse.core.bench.arrivals import poisson_offsets
from roundhouse.core.bench.failures import advice, group_failures, with_groups
from roundhouse.core.bench.metrics import compute_metrics
from roundhouse.core.bench.runner import Target, new_session, run_requests, warm_up
from roundhouse.core.bench.workloads import Prompt, random_prompts, sharegpt_prompts
from roundhouse.core.errors import NotFoundError, RoundhouseError

if TYPE_CHECKING:
    from roundhouse.core.bench.ab import AbService

log = logging.getLogger(__name__)
_ID = re.compile(r"^[0-9a-f]{12}$")
# Results kept on disk; the oldest go beyond this.
MAX_RESULTS = 500


@dataclass
class _Job:
    progress: BenchProgress
    task: asyncio.Task[None] | None = None


def build_prompts(request: BenchRequest) -> list[Prompt]:
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
) -> BenchResult:
    """Warm up, then run the whole benchmark against `base_url` (ending in /v1); the
    failures are grouped by reason, with advice naming `serving`'s context where known."""
    prompts = build_prompts(request)
    target = Target(
        base_url, api_key, request.model, request.endpoint, request.ignore_eos, request.timeout_s
    )
    offsets = poisson_offsets(len(prompts), request.request_rate, request.seed, request.convention)

    def advance(done: int, total: int, failed: int) -> None:
        if progress is not None:
            progress.done, progress.total, progress.failed = done, total, failed

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
    """Runs benchmarks through the daemon's own gateway and keeps their results."""

    def __init__(self, folder: Path, gateway_url: str, api_key: str) -> None:
        self.folder = folder
        self.gateway_url = gateway_url
        self.api_key = api_key
        self._jobs: dict[str, _Job] = {}
        # A/B runs, made on first use by whoever has the instance service.
        self.ab: AbService | None = None

    def start(
        self,
        request: BenchRequest,
        engine: str | None = None,
        serving: ServingContext | None = None,
    ) -> BenchProgress:
        job_id = uuid.uuid4().hex[:12]
        progress = BenchProgress(id=job_id, state=BenchState.RUNNING, total=request.num_prompts)
        job = _Job(progress)
        self._jobs[job_id] = job
        job.task = asyncio.create_task(
            self._run(job, request, engine, serving), name=f"bench-{job_id}"
        )
        return progress

    async def _run(
        self,
        job: _Job,
        request: BenchRequest,
        engine: str | None,
        serving: ServingContext | None,
    ) -> None:
        try:
            result = await run_benchmark(
                request, self.gateway_url, self.api_key, job.progress, serving
            )
            result = result.model_copy(update={"engine": engine})
            await asyncio.to_thread(self._save, result)
            job.progress.kept = True
            if result.status is BenchStatus.FAILED:
                # Kept, to be seen with its reasons, but the job failed: it has no figures.
                job.progress.state = BenchState.FAILED
                job.progress.error = _failed_run(result)
            else:
                job.progress.state = BenchState.DONE
        except asyncio.CancelledError:
            job.progress.state = BenchState.CANCELLED
            raise
        except RoundhouseError as exc:
            job.progress.state, job.progress.error = BenchState.FAILED, exc.detail
        except Exception as exc:  # a job's failure is shown, not lost
            log.exception("benchmark %s failed", job.progress.id)
            job.progress.state = BenchState.FAILED
            job.progress.error = f"The benchmark failed: {type(exc).__name__}: {exc}"

    def progress(self, job_id: str) -> BenchProgress:
        job = self._jobs.get(job_id)
        if job is not None:
            return job.progress
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
        job = self._jobs.get(job_id)
        if job is None or job.task is None:
            raise NotFoundError(f"There is no running benchmark {job_id!r}.")
        job.task.cancel()
        return job.progress

    async def aclose(self) -> None:
        if self.ab is not None:
            await self.ab.aclose()
        for job in self._jobs.values():
            if job.task is not None and not job.task.done():
                job.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await job.task

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
        self._jobs.pop(result_id, None)
