"""What metrics and sampling cost an idle daemon with two instances running: under 2% of a
core over 20 s (the 1 Hz tick reads both process trees and publishes a snapshot)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import StartRequest
from tests.daemon_process import path_with, start_daemon, start_ready

IDLE_SECONDS = 20


@pytest.mark.perf
def test_metrics_idle_cpu_with_two_instances(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path: Path, report: Any
) -> None:
    daemon = start_daemon(tmp_path / "home", env=path_with(llama_server_binary))
    try:
        for name in ("tiny-a", "tiny-b"):
            options = InstanceOptions(model=str(tiny_gguf), ctx_size=512, served_name=name)
            request = StartRequest(engine=EngineId.LLAMA_CPP, options=options)
            asyncio.run(start_ready(daemon, request, 60.0))
        proc = psutil.Process(daemon.process.pid)
        time.sleep(12)  # past the first slow readings (mapped files, engine figures)
        before = proc.cpu_times()
        started = time.monotonic()
        time.sleep(IDLE_SECONDS)
        after = proc.cpu_times()
        elapsed = time.monotonic() - started
        cpu_percent = 100 * ((after.user - before.user) + (after.system - before.system)) / elapsed
        report.add("idle_cpu_percent_of_one_core_two_instances", round(cpu_percent, 3))
        report.add("budget", "< 2% of one core")
        assert cpu_percent < 2.0
    finally:
        daemon.stop(timeout=60)
