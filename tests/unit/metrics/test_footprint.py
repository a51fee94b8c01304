"""macOS's physical footprint in place of RSS: the struct, the platform switch, the fallback.

proc_pid_rusage itself only runs on a Mac; here the struct is read from a made-up buffer laid
out as <sys/resource.h> declares rusage_info_v2, and the sampler is given a footprint reader.
"""

from __future__ import annotations

import ctypes
import struct
import subprocess
import sys

import psutil

from roundhouse.core.metrics.process import (
    ProcessSampler,
    RusageInfoV2,
    footprint_for,
    phys_footprint_of,
)

# uuid[16], then 18 uint64 fields; ri_phys_footprint is the eighth of them.
FOOTPRINT_INDEX = 7


def test_the_struct_is_laid_out_as_the_header_declares() -> None:
    assert ctypes.sizeof(RusageInfoV2) == 16 + 18 * 8
    assert RusageInfoV2.ri_phys_footprint.offset == 16 + FOOTPRINT_INDEX * 8  # type: ignore[attr-defined]


def test_the_footprint_is_read_from_a_filled_buffer() -> None:
    fields = [1000 + i for i in range(18)]
    fields[FOOTPRINT_INDEX] = 7 * 1024**3  # 7 GiB: weights in Metal buffers
    fields[FOOTPRINT_INDEX - 1] = 300 * 1024**2  # ri_resident_size, what RSS would say
    buffer = bytes(range(16)) + struct.pack("=18Q", *fields)
    assert phys_footprint_of(buffer) == 7 * 1024**3


def test_only_macos_gets_a_footprint_reader() -> None:
    assert footprint_for("linux") is None
    assert footprint_for("win32") is None


def test_the_sampler_uses_the_footprint_and_falls_back_to_rss() -> None:
    # A process of its own with no children (this test run may have some: the sampler
    # adds a tree's children).
    lone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        told = ProcessSampler(footprint=lambda pid: 5 * 1024**3 if pid == lone.pid else None)
        assert told.read(lone.pid).rss_bytes == 5 * 1024**3
        silent = ProcessSampler(footprint=lambda pid: None)
        rss = silent.read(lone.pid).rss_bytes
        expected = psutil.Process(lone.pid).memory_info().rss
        assert rss is not None and abs(rss - expected) < 64 * 1024**2
    finally:
        lone.kill()
        lone.wait()
