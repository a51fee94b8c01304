"""Idle cost of the daemon: resident memory and CPU over 60 s with the sampler running."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.daemon_process import start_daemon

IDLE_SECONDS = 60


@pytest.mark.perf
def test_daemon_idle_rss_and_cpu(tmp_path: Path, report: Any) -> None:
    daemon = start_daemon(tmp_path / "home")
    try:
        proc = psutil.Process(daemon.process.pid)
        time.sleep(5)  # let start-up work (inventory, imports) finish
        before = proc.cpu_times()
        started = time.monotonic()
        time.sleep(IDLE_SECONDS)
        after = proc.cpu_times()
        elapsed = time.monotonic() - started
        cpu_percent = 100 * ((after.user - before.user) + (after.system - before.system)) / elapsed
        memory = proc.memory_full_info()
        report.add("idle_cpu_percent_of_one_core", round(cpu_percent, 3))
        report.add("rss_mb", round(memory.rss / 1e6, 1))
        report.add("uss_mb", round(memory.uss / 1e6, 1))
        report.add("budget", "RSS <= 80 MB, CPU < 1%")
        assert memory.rss <= 80e6
        assert cpu_percent < 1.0
    finally:
        daemon.stop()
