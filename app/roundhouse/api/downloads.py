"""The model download queue as the API shows it: requests, items, their states and totals."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from roundhouse.api.jobs import JobState


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DownloadState(StrEnum):
    QUEUED = "queued"
    DOWNLOADING = "downloading"
    PAUSED = "paused"
    # The file is complete and its digest is being checked.
    VERIFYING = "verifying"
    DONE = "done"
    # Stopped by an error (the disk is full, the Hub refused, retries ran out): the partial
    # file is kept and `resume` continues from it.
    FAILED = "failed"
    # The user cancelled: the partial file was removed.
    CANCELLED = "cancelled"
    # The finished file did not match the Hub's digest: it was moved to `quarantine_path`,
    # never deleted. `resume` downloads it again from the start.
    QUARANTINED = "quarantined"


# States in which an item still wants bytes (and counts against free disk space).
UNFINISHED_STATES = frozenset(
    {DownloadState.QUEUED, DownloadState.DOWNLOADING, DownloadState.PAUSED, DownloadState.VERIFYING}
)
# Each state as a job of the daemon's job board says it (paused: waiting, like queued).
JOB_STATES = {
    DownloadState.QUEUED: JobState.QUEUED,
    DownloadState.PAUSED: JobState.QUEUED,
    DownloadState.DOWNLOADING: JobState.RUNNING,
    DownloadState.VERIFYING: JobState.RUNNING,
    DownloadState.DONE: JobState.DONE,
    DownloadState.FAILED: JobState.FAILED,
    DownloadState.QUARANTINED: JobState.FAILED,
    DownloadState.CANCELLED: JobState.CANCELLED,
}
# States that `resume` accepts.
RESUMABLE_STATES = frozenset(
    {
        DownloadState.PAUSED,
        DownloadState.FAILED,
        DownloadState.CANCELLED,
        DownloadState.QUARANTINED,
    }
)


class DownloadRequest(_Frozen):
    """Files of one Hub repository to download: named paths, or a glob pattern, or both."""

    repo: str = Field(max_length=200, description="the repository id, e.g. 'Qwen/Qwen3-0.6B-GGUF'")
    revision: str = Field(default="main", max_length=256, description="a branch, tag or commit")
    files: list[str] = Field(default=[], max_length=1000, description="paths in the repository")
    pattern: str | None = Field(
        default=None,
        max_length=256,
        description="a glob over paths in the repository ('*Q4_K_M*.gguf', '*' for all)",
    )
    projector: bool = Field(
        default=True,
        description="with a GGUF model, its vision projector (mmproj) from the same folder of "
        "the repository too, when it has one and none is named",
    )


class DownloadItem(_Frozen):
    """One file of the queue."""

    kind: Literal["hub"] = Field(default="hub", description="a file from the Hugging Face Hub")
    id: str
    repo: str
    revision: str
    commit: str = Field(description="the commit the file is pinned to (40 hex digits)")
    path: str = Field(description="the file's path in the repository")
    size: int = Field(ge=0)
    bytes_done: int = Field(ge=0, description="bytes in the partial (or final) file")
    speed_bps: float = Field(
        default=0.0, ge=0, description="bytes per second over the last few seconds"
    )
    eta_s: float | None = Field(default=None, description="None while stalled or unknown")
    stalled: bool = Field(default=False, description="no bytes for a while; retrying")
    state: DownloadState
    error: str | None = Field(default=None, description="what went wrong and what to do")
    sha256: str | None = Field(default=None, description="the Hub's LFS sha256, when LFS")
    etag: str = Field(description="the blob's name in the cache")
    local_path: str | None = Field(
        default=None, description="the file in the snapshot folder, once done"
    )
    quarantine_path: str | None = Field(
        default=None, description="where a file that failed its digest check was moved"
    )
    created_at: float
    updated_at: float

    @property
    def remaining_bytes(self) -> int:
        return max(0, self.size - self.bytes_done)


# Ids of Ollama pull jobs start with this, for people to tell them apart; programs read an
# item's `kind`.
OLLAMA_ID_PREFIX = "ollama-"


class OllamaDownloadRequest(_Frozen):
    """An Ollama model to pull through the queue."""

    model: str = Field(min_length=1, max_length=200, description="a tag such as 'qwen2.5:0.5b'")
    instance: str | None = Field(
        default=None,
        max_length=200,
        description="the Ollama instance to pull into; default: one serving, else OLLAMA_HOST",
    )


class OllamaPullItem(_Frozen):
    """One Ollama pull of the queue: bytes summed over the model's layers, as Ollama says."""

    kind: Literal["ollama"] = "ollama"
    id: str = Field(description="'ollama-' and 10 hex digits")
    model: str
    base_url: str = Field(description="the Ollama the model is pulled into")
    instance: str | None = Field(default=None, description="the instance asked for, if any")
    size: int = Field(ge=0, description="bytes of the layers Ollama has announced so far")
    bytes_done: int = Field(ge=0)
    layers: int = Field(default=0, ge=0, description="layers announced so far")
    speed_bps: float = Field(default=0.0, ge=0)
    eta_s: float | None = Field(default=None, description="None while stalled or unknown")
    stalled: bool = Field(default=False, description="no bytes for a while")
    state: DownloadState
    status: str = Field(default="", description="Ollama's last status line ('pulling …')")
    error: str | None = Field(default=None, description="what went wrong and what to do")
    note: str | None = Field(default=None, description="what happens to Ollama's partial layers")
    created_at: float
    updated_at: float

    @property
    def remaining_bytes(self) -> int:
        return max(0, self.size - self.bytes_done)


# What the item routes answer: a file from the Hub or an Ollama pull, as its `kind` says.
AnyDownloadItem = Annotated[DownloadItem | OllamaPullItem, Field(discriminator="kind")]


class DownloadItemReply(RootModel[AnyDownloadItem]):
    """An item route's answer read by its `kind` (clients parse it with this)."""


class DownloadTotals(_Frozen):
    items: int = 0
    active: int = Field(default=0, description="items transferring or verifying now")
    queued: int = 0
    unfinished_bytes: int = Field(
        default=0, description="sum of sizes of queued, downloading, paused and verifying items"
    )
    unfinished_done_bytes: int = Field(default=0, description="bytes of those already on disk")
    speed_bps: float = 0.0
    eta_s: float | None = None


class DownloadQueueView(_Frozen):
    """The whole queue (oldest first), as lists and progress streams show it."""

    items: list[DownloadItem]
    totals: DownloadTotals = Field(description="over the files and the Ollama pulls")
    max_concurrent: int
    hub_cache: str = Field(description="the Hugging Face cache new downloads go to")
    ollama: list[OllamaPullItem] = Field(
        default=[], description="Ollama pulls, the oldest first (their limit is max_concurrent too)"
    )
