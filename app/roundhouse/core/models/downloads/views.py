"""Live state of each queued file, and the api models built from it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import Enum

from roundhouse.api.downloads import (
    UNFINISHED_STATES,
    DownloadItem,
    DownloadQueueView,
    DownloadState,
    DownloadTotals,
)
from roundhouse.core.infra.transfer.rate import RollingRate
from roundhouse.core.models.downloads.records import Entry


class Intent(Enum):
    """Why a running download's task was cancelled."""

    PAUSE = "pause"
    CANCEL = "cancel"
    CLOSE = "close"  # the daemon stops: queued again, resumed by the next start


@dataclass
class Live:
    """An entry with what only the running process knows."""

    entry: Entry
    task: asyncio.Task[None] | None = None
    intent: Intent | None = None
    received: int = 0  # bytes in the partial now (the entry records the durable ones)
    retrying: bool = False
    rate: RollingRate = field(default_factory=RollingRate)

    @property
    def running(self) -> bool:
        return self.task is not None

    def bytes_now(self) -> int:
        entry = self.entry
        if entry.state == DownloadState.DONE or entry.state == DownloadState.VERIFYING:
            return entry.size
        if self.running:
            return max(self.received, entry.bytes_done)
        return entry.bytes_done


def item_of(live: Live, now: float) -> DownloadItem:
    entry = live.entry
    done = min(live.bytes_now(), entry.size)
    speed, eta, stalled = 0.0, None, False
    if entry.state == DownloadState.DOWNLOADING:
        progress = live.rate.progress(now, entry.size - done, retrying=live.retrying)
        speed, eta, stalled = progress.speed_bps, progress.eta_s, progress.stalled
    return DownloadItem(
        id=entry.id,
        repo=entry.repo,
        revision=entry.revision,
        commit=entry.commit,
        path=entry.path,
        size=entry.size,
        bytes_done=done,
        speed_bps=speed,
        eta_s=eta,
        stalled=stalled,
        state=entry.state,
        error=entry.error,
        sha256=entry.sha256,
        etag=entry.etag,
        local_path=entry.local_path,
        quarantine_path=entry.quarantine_path,
        created_at=entry.created_at,
        updated_at=entry.updated_at,
    )


def queue_view(
    lives: list[Live], now: float, max_concurrent: int, hub_cache: str
) -> DownloadQueueView:
    items = [item_of(live, now) for live in sorted(lives, key=lambda live: live.entry.seq)]
    unfinished = [item for item in items if item.state in UNFINISHED_STATES]
    speed = sum(item.speed_bps for item in items)
    moving = [i for i in items if i.state in (DownloadState.QUEUED, DownloadState.DOWNLOADING)]
    left = sum(item.remaining_bytes for item in moving)
    stalled = any(item.stalled for item in moving)
    totals = DownloadTotals(
        items=len(items),
        active=sum(
            item.state in (DownloadState.DOWNLOADING, DownloadState.VERIFYING) for item in items
        ),
        queued=sum(item.state == DownloadState.QUEUED for item in items),
        unfinished_bytes=sum(item.size for item in unfinished),
        unfinished_done_bytes=sum(item.bytes_done for item in unfinished),
        speed_bps=speed,
        eta_s=left / speed if speed > 0 and not stalled else (0.0 if left == 0 else None),
    )
    return DownloadQueueView(
        items=items, totals=totals, max_concurrent=max_concurrent, hub_cache=hub_cache
    )
