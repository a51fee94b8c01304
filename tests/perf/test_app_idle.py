"""Idle cost of the desktop app on the live Hardware page: RSS and CPU over 60 s."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.daemon_process import start_daemon

IDLE_SECONDS = 60


def _cpu_seconds(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


@pytest.mark.perf
def test_app_idle_rss_and_cpu(tmp_path: Path, report: Any) -> None:
    daemon = start_daemon(tmp_path / "home")
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    app = subprocess.Popen(
        [sys.executable, "-m", "roundhouse", "--home", str(tmp_path / "home")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        proc = psutil.Process(app.pid)
        daemon_proc = psutil.Process(daemon.process.pid)
        time.sleep(10)  # connected, history loaded, charts drawn once
        assert app.poll() is None, "the app exited"
        app_before, daemon_before = _cpu_seconds(proc), _cpu_seconds(daemon_proc)
        started = time.monotonic()
        time.sleep(IDLE_SECONDS)
        elapsed = time.monotonic() - started
        app_cpu = 100 * (_cpu_seconds(proc) - app_before) / elapsed
        daemon_cpu = 100 * (_cpu_seconds(daemon_proc) - daemon_before) / elapsed
        rss = proc.memory_info().rss
        report.add("app_idle_cpu_percent_of_one_core", round(app_cpu, 2))
        report.add("app_rss_mb", round(rss / 1e6, 1))
        report.add("daemon_cpu_percent_while_streaming_to_the_app", round(daemon_cpu, 2))
        report.add("daemon_rss_mb_while_streaming", round(daemon_proc.memory_info().rss / 1e6, 1))
        report.add("budget", "app RSS <= 150 MB, CPU < 1%")
        assert rss <= 150e6
        assert app_cpu < 1.0
    finally:
        app.terminate()
        app.wait(timeout=15)
        daemon.stop()
