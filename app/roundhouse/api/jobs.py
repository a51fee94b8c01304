"""Jobs as the API shows any of them: their kind, their state, and one generic view."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class JobState(StrEnum):
    """Where a job is: waiting its turn, running, or ended one of three ways."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


ENDED_STATES = frozenset({JobState.DONE, JobState.FAILED, JobState.CANCELLED})


class JobKind(StrEnum):
    """What a job does; each kind keeps its own detailed shape on its own routes."""

    INSTALL = "install"
    DOWNLOAD = "download"  # one file from the Hugging Face Hub
    OLLAMA_PULL = "ollama_pull"
    BENCH = "bench"
    AB = "ab"


class JobView(BaseModel):
    """Any job in a few fields, the same for every kind (the change feed carries these)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    kind: JobKind
    state: JobState
    started_at: float = Field(description="seconds since the Unix epoch")
    ended_at: float | None = None
    fraction: float | None = Field(
        default=None, ge=0.0, le=1.0, description="how much is done; None: not known"
    )
    message: str = Field(default="", description="what it does now, in words")
    error: str | None = Field(default=None, description="why it failed, and what to do")
    detail: dict[str, Any] | None = Field(
        default=None,
        description=(
            "the job in its kind's own shape, as its route returns it: install InstallJob, "
            "download DownloadItem, ollama_pull OllamaPullItem, bench BenchProgress, ab AbProgress"
        ),
    )


class JobList(BaseModel):
    """Every job the daemon holds (running, waiting, and the latest ended of each kind)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    jobs: list[JobView]
