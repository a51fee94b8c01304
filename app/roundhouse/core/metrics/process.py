"""CPU, resident memory and mapped model files of an instance's process tree."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

# Reading every mapping (/proc/PID/smaps) and listing children cost milliseconds: rarely.
SLOW_EVERY_S = 10.0
# A file mapping this large is a model's weights, not a shared library.
MODEL_FILE_MIN_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class ProcessReading:
    cpu_percent: float | None
    rss_bytes: int | None
    mapped_bytes: int | None


class _Tracked:
    """psutil objects kept between readings: cpu_percent compares with the previous call."""

    def __init__(self, root: psutil.Process) -> None:
        self.root = root
        self.children: list[psutil.Process] = []
        self.slow_at = -SLOW_EVERY_S
        self.mapped: int | None = None


class ProcessSampler:
    """Reads a process tree each tick: the fast figures every time, the slow ones seldom."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._tracked: dict[int, _Tracked] = {}

    def read(self, pid: int) -> ProcessReading:
        tracked = self._tracked.get(pid)
        if tracked is None:
            try:
                root = psutil.Process(pid)
                root.cpu_percent(None)  # primes: the first call always says 0.0
            except psutil.Error:
                return ProcessReading(None, None, None)
            tracked = self._tracked[pid] = _Tracked(root)
        now = self._clock()
        if now - tracked.slow_at >= SLOW_EVERY_S:
            tracked.slow_at = now
            self._read_slow(tracked)
        cpu = 0.0
        rss = 0
        try:
            with tracked.root.oneshot():
                cpu += tracked.root.cpu_percent(None)
                rss += tracked.root.memory_info().rss
        except psutil.Error:
            self._tracked.pop(pid, None)
            return ProcessReading(None, None, None)
        for child in tracked.children:
            with contextlib.suppress(psutil.Error):
                cpu += child.cpu_percent(None)
                rss += child.memory_info().rss
        return ProcessReading(cpu, rss, tracked.mapped)

    def _read_slow(self, tracked: _Tracked) -> None:
        try:
            known = {c.pid: c for c in tracked.children}
            children = tracked.root.children(recursive=True)
        except psutil.Error:
            return
        fresh = []
        for child in children:
            kept = known.get(child.pid)
            if kept is None:
                with contextlib.suppress(psutil.Error):
                    child.cpu_percent(None)
                kept = child
            fresh.append(kept)
        tracked.children = fresh
        tracked.mapped = _mapped_model_bytes([tracked.root, *fresh])

    def forget_except(self, pids: set[int]) -> None:
        for gone in self._tracked.keys() - pids:
            del self._tracked[gone]

    def tree_pids(self, pid: int) -> set[int]:
        tracked = self._tracked.get(pid)
        if tracked is None:
            return {pid}
        return {pid, *(c.pid for c in tracked.children)}


def _mapped_model_bytes(processes: list[psutil.Process]) -> int | None:
    """Bytes of large files mapped (model weights that mmap keeps out of the heap), counted
    once per file; None where the platform does not let us look."""
    sizes: dict[str, int] = {}
    looked = False
    for proc in processes:
        try:
            maps = proc.memory_maps(grouped=True)
        except (psutil.Error, NotImplementedError, OSError):
            continue
        looked = True
        for m in maps:
            path = m.path
            if not path.startswith("/") or path.startswith(("/dev/", "/memfd:")):
                continue
            size = int(getattr(m, "size", 0) or getattr(m, "rss", 0))
            if size >= MODEL_FILE_MIN_BYTES:
                sizes[path] = max(sizes.get(path, 0), size)
    return sum(sizes.values()) if looked else None
