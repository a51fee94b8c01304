"""Engine logs of instances no longer running are pruned by age, then by total size.

Every instance logs to `<engine>-<id>.log` (rotated to `.log.1`...`.log.3` at 5 MB) and a new
start gets a new id, so without pruning the folder grows with every start. Pruned when the
daemon starts and when an instance starts; the logs of the instances it runs (or adopted)
are never touched, whatever their age or size.
"""

from __future__ import annotations

import logging
import re
import stat
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

DAY_S = 86_400.0
MiB = 1024 * 1024
# An instance's log, and its rotations: `llama.cpp-0123456789ab.log.2`.
_ENGINE_LOG = re.compile(r"(?P<family>.+-[0-9a-f]{12}\.log)(?:\.\d{1,3})?")


@dataclass(frozen=True)
class LogLimits:
    """Logs of ended instances older than `max_age_days` go; then the oldest go until the
    folder holds at most `max_total_bytes` (the running instances' logs count, but stay)."""

    max_age_days: float = 14.0
    max_total_bytes: int = 200 * MiB


DEFAULT_LIMITS = LogLimits()


@dataclass(frozen=True)
class _LogFile:
    path: Path
    family: str  # the instance's log file name, shared by its rotations
    size: int
    mtime: float


def prune_engine_logs(
    log_dir: Path, keep: Collection[str], now: float, limits: LogLimits = DEFAULT_LIMITS
) -> list[Path]:
    """Delete engine logs in `log_dir` past `limits`, never those of the file names in
    `keep` (the running instances' `<engine>-<id>.log`) or their rotations; the deleted
    files, oldest first. Files that are not engine logs are left alone. Blocking."""
    files = _engine_logs(log_dir)
    total = sum(f.size for f in files)
    kept = frozenset(keep)
    oldest_age_s = limits.max_age_days * DAY_S
    removed: list[Path] = []
    for found in sorted(files, key=lambda f: f.mtime):
        if found.family in kept:
            continue
        too_old = now - found.mtime > oldest_age_s
        if not too_old and total <= limits.max_total_bytes:
            continue
        try:
            found.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("Cannot delete the old engine log %s: %s", found.path, exc)
            continue
        total -= found.size
        removed.append(found.path)
    if removed:
        log.info("Deleted %d old engine log files in %s", len(removed), log_dir)
    return removed


def _engine_logs(log_dir: Path) -> list[_LogFile]:
    try:
        entries = list(log_dir.iterdir())
    except OSError:
        return []  # no folder yet: nothing logged
    found: list[_LogFile] = []
    for path in entries:
        matched = _ENGINE_LOG.fullmatch(path.name)
        if matched is None:
            continue
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            found.append(_LogFile(path, matched["family"], info.st_size, info.st_mtime))
    return found
