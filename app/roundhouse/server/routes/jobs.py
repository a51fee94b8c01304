"""Route of the job board: every job of the daemon in one list (a feed's reset reloads it)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from roundhouse.api.jobs import JobKind, JobList
from roundhouse.server.deps import Jobs

router = APIRouter(prefix="/jobs", tags=["jobs"])


@router.get("", response_model=JobList)
async def list_jobs(
    jobs: Jobs,
    kind: Annotated[JobKind | None, Query(description="only jobs of this kind")] = None,
) -> JobList:
    """Installs, downloads, Ollama pulls, benchmarks and A/B runs: running, waiting, and the
    latest ended of each kind, the oldest first; each with its kind's own shape in `detail`.
    The change feed's `jobs` event carries the same list after each change."""
    return jobs.listing(kind)
