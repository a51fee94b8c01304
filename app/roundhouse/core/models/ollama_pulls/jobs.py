"""A pull job's live state, how Ollama's progress lines change it, and its api item."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from roundhouse.api.downloads import DownloadState, OllamaPullItem
from roundhouse.api.ollama import OllamaPullProgress
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.infra.transfer.rate import RollingRate
from roundhouse.core.models.downloads.views import Intent
from roundhouse.core.models.ollama_pulls.records import PullEntry

# Once Ollama checks digests and writes the manifest, no more bytes come.
_CHECKING = ("verifying", "writing manifest", "removing")


@dataclass
class PullJob:
    """An entry with what only the running process knows."""

    entry: PullEntry
    task: asyncio.Task[None] | None = None
    intent: Intent | None = None
    rate: RollingRate = field(default_factory=RollingRate)
    saved_at: float = 0.0  # monotonic time of the last progress save

    @property
    def running(self) -> bool:
        return self.task is not None


def apply_step(entry: PullEntry, step: OllamaPullProgress) -> bool:
    """Take one progress line into the entry; whether its state changed."""
    entry.status = step.status
    if step.digest and step.total:
        before = entry.layers.get(step.digest, [0, step.total])[0]
        # A layer's first line has no `completed`: keep what it had until the next says.
        done = step.completed if step.completed is not None else before
        entry.layers[step.digest] = [max(0, done), step.total]
    if step.done:
        for pair in entry.layers.values():
            pair[0] = pair[1]
        return False
    if step.status.startswith(_CHECKING) and entry.state == DownloadState.DOWNLOADING:
        entry.state = DownloadState.VERIFYING
        return True
    return False


def item_of(job: PullJob, now: float) -> OllamaPullItem:
    entry = job.entry
    size, done = entry.size, entry.bytes_done
    if entry.state in (DownloadState.DONE, DownloadState.VERIFYING):
        done = size
    speed, eta, stalled = 0.0, None, False
    if entry.state == DownloadState.DOWNLOADING and size > 0:
        progress = job.rate.progress(now, size - done)
        speed, eta, stalled = progress.speed_bps, progress.eta_s, progress.stalled
    return OllamaPullItem(
        id=entry.id,
        model=entry.model,
        base_url=entry.base_url,
        instance=entry.instance,
        size=size,
        bytes_done=done,
        layers=len(entry.layers),
        speed_bps=speed,
        eta_s=eta,
        stalled=stalled,
        state=entry.state,
        status=entry.status,
        error=entry.error,
        note=entry.note,
        created_at=entry.created_at,
        updated_at=entry.updated_at,
    )


def check_model_name(model: str) -> str:
    """The name as Ollama takes it; InvalidInputError in words for one it cannot be."""
    name = model.strip()
    if not name or any(ch.isspace() or not ch.isprintable() for ch in name):
        raise InvalidInputError(
            f"{model!r} is not an Ollama model name. Use a tag such as 'qwen2.5:7b' or 'llama3.2'."
        )
    return name
