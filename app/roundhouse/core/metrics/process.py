"""CPU, resident memory and mapped model files of an instance's process tree."""

from __future__ import annotations

import contextlib
import ctypes
import sys
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


# pid -> the bytes the process really holds, where the platform says it better than RSS.
Footprint = Callable[[int], int | None]

# <sys/resource.h>: the flavour of proc_pid_rusage whose struct has ri_phys_footprint.
RUSAGE_INFO_V2 = 2


class RusageInfoV2(ctypes.Structure):
    """struct rusage_info_v2 of <sys/resource.h> (macOS 10.9 and later)."""

    _fields_ = [
        ("ri_uuid", ctypes.c_uint8 * 16),
        *(
            (name, ctypes.c_uint64)
            for name in (
                "ri_user_time",
                "ri_system_time",
                "ri_pkg_idle_wkups",
                "ri_interrupt_wkups",
                "ri_pageins",
                "ri_wired_size",
                "ri_resident_size",
                "ri_phys_footprint",
                "ri_proc_start_abstime",
                "ri_proc_exit_abstime",
                "ri_child_user_time",
                "ri_child_system_time",
                "ri_child_pkg_idle_wkups",
                "ri_child_interrupt_wkups",
                "ri_child_pageins",
                "ri_child_elapsed_abstime",
                "ri_diskio_bytesread",
                "ri_diskio_byteswritten",
            )
        ),
    ]


def phys_footprint_of(buffer: bytes) -> int:
    """ri_phys_footprint of a filled rusage_info_v2."""
    return int(RusageInfoV2.from_buffer_copy(buffer).ri_phys_footprint)


def _darwin_footprint() -> Footprint:
    # RSS leaves out the GPU (Metal) buffers an engine holds in unified memory; the physical
    # footprint, what Activity Monitor shows as Memory, counts them.
    libproc = ctypes.CDLL("/usr/lib/libproc.dylib", use_errno=True)
    call = libproc.proc_pid_rusage
    call.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    call.restype = ctypes.c_int

    def footprint(pid: int) -> int | None:
        info = RusageInfoV2()
        if call(pid, RUSAGE_INFO_V2, ctypes.byref(info)) != 0:
            return None  # gone, or not ours to read: RSS stands
        return phys_footprint_of(bytes(info))

    return footprint


def footprint_for(platform: str = sys.platform) -> Footprint | None:
    """The platform's better memory figure, or None where RSS is the one to use."""
    if platform != "darwin":
        return None
    try:
        return _darwin_footprint()
    except (OSError, AttributeError):
        return None  # an older macOS without it: RSS


class ProcessSampler:
    """Reads a process tree each tick: the fast figures every time, the slow ones seldom."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        footprint: Footprint | None = None,
    ) -> None:
        self._clock = clock
        self._footprint = footprint
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
                rss += self._memory(tracked.root)
        except psutil.Error:
            self._tracked.pop(pid, None)
            return ProcessReading(None, None, None)
        for child in tracked.children:
            with contextlib.suppress(psutil.Error):
                cpu += child.cpu_percent(None)
                rss += self._memory(child)
        return ProcessReading(cpu, rss, tracked.mapped)

    def _memory(self, proc: psutil.Process) -> int:
        if self._footprint is not None:
            footprint = self._footprint(proc.pid)
            if footprint is not None:
                return footprint
        return int(proc.memory_info().rss)

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
