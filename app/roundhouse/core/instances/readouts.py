"""What an instance says when asked: its output lines, and the engine's own metrics."""

from __future__ import annotations

import re
import time
from collections import deque
from pathlib import Path

from roundhouse.api.engines import EngineId, EngineSpec
from roundhouse.api.instances import InstanceLogs, InstanceMetrics
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.metrics import fetch_metrics
from roundhouse.core.errors import NotFoundError
from roundhouse.core.instances.entries import InstanceEntry
from roundhouse.core.instances.keys import auth_headers

# LogCapture's file lines start with "2026-11-21 12:53:12,123 ".
_FILE_STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")


async def read_metrics(entry: InstanceEntry, key: str | None) -> InstanceMetrics:
    """The engine's own metrics (tokens, requests), for engines that serve them."""
    spec = entry.spec or _catalog_spec(entry.engine)
    if spec is None or spec.metrics_path is None:
        raise NotFoundError(
            f"{entry.engine.value} serves no metrics endpoint; Roundhouse measures its "
            "tokens per second at the gateway instead."
        )
    url = entry.base_url.rstrip("/") + spec.metrics_path
    values = await fetch_metrics(url, spec.metric_names, auth_headers(key))
    return InstanceMetrics(id=entry.id, url=url, values=values, fetched_at=time.time())


def read_logs(entry: InstanceEntry, since: int, limit: int) -> InstanceLogs:
    """Output lines numbered after `since`: from memory, or from the log file for an
    instance an earlier daemon started (its output stopped reaching us then)."""
    if entry.process is not None:
        lines, last, truncated = entry.process.log.since(since, limit)
        return InstanceLogs(
            id=entry.id,
            lines=lines,
            next=last,
            truncated=truncated,
            path=entry.log_path,
            generation=entry.generation,
        )
    lines = _read_log_file(entry.log_path)
    chosen = lines[since : since + max(limit, 0)]
    return InstanceLogs(id=entry.id, lines=chosen, next=since + len(chosen), path=entry.log_path)


def _catalog_spec(engine: EngineId) -> EngineSpec | None:
    try:
        return load_catalog().spec(engine)
    except KeyError:
        return None


def _read_log_file(path: str | None, keep: int = 2000) -> list[str]:
    if path is None:
        return []
    try:
        with Path(path).open(encoding="utf-8", errors="replace") as handle:
            tail = deque(handle, maxlen=keep)
    except OSError:
        return []
    return [_FILE_STAMP.sub("", line.rstrip("\r\n"), count=1) for line in tail]
