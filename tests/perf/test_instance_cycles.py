"""100 start/stop cycles of llama-server through the daemon: no orphan, and the daemon's
memory, threads and open files do not grow."""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceInfo, InstanceOrigin, InstanceStatus, StartRequest
from roundhouse.client import DaemonClient
from tests.daemon_process import path_with, start_daemon
from tests.processes import alive

CYCLES = 100
WARMUP = 30


def _footprint(proc: psutil.Process) -> tuple[int, int, int]:
    return proc.memory_info().rss, proc.num_threads(), proc.num_fds()


async def _cycle(client: DaemonClient, model: Path) -> tuple[int, float]:
    began = time.monotonic()
    info: InstanceInfo = await client.start_instance(
        StartRequest(
            engine=EngineId.LLAMA_CPP,
            options=InstanceOptions(model=str(model), ctx_size=256, parallel=1),
        )
    )
    while info.status not in (InstanceStatus.READY, InstanceStatus.FAILED):
        await asyncio.sleep(0.02)
        info = await client.instance(info.id)
    assert info.status == InstanceStatus.READY, info
    assert info.pid is not None
    await client.stop_instance(info.id)
    return info.pid, time.monotonic() - began


@pytest.mark.perf
def test_hundred_start_stop_cycles(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path: Path, report: Any
) -> None:
    daemon = start_daemon(tmp_path / "home", env=path_with(llama_server_binary))
    proc = psutil.Process(daemon.process.pid)
    try:

        async def main() -> tuple[list[int], list[float], tuple[int, int, int]]:
            async with DaemonClient(daemon.url, daemon.token) as client:
                for _ in range(WARMUP):
                    await _cycle(client, tiny_gguf)
                await asyncio.sleep(1)
                before = _footprint(proc)
                pids: list[int] = []
                times: list[float] = []
                for _ in range(CYCLES):
                    pid, took = await _cycle(client, tiny_gguf)
                    pids.append(pid)
                    times.append(took)
                listed = (await client.instances()).instances
                assert [i for i in listed if i.origin != InstanceOrigin.EXTERNAL] == []
                return pids, times, before

        pids, times, before = asyncio.run(main())
        time.sleep(1)
        after = _footprint(proc)
        orphans = [pid for pid in pids if alive(pid)]
        report.add("cycles", CYCLES)
        report.add("orphans", len(orphans))
        report.add("cycle_median_s", round(statistics.median(times), 3))
        report.add(
            "daemon_rss_mb_before_after", [round(before[0] / 1e6, 1), round(after[0] / 1e6, 1)]
        )
        report.add("daemon_threads_before_after", [before[1], after[1]])
        report.add("daemon_fds_before_after", [before[2], after[2]])
        report.add("budget", "0 orphans; RSS +<=5%; threads and fds not above before")
        assert orphans == []
        assert after[0] <= before[0] * 1.05
        assert after[1] <= before[1]
        assert after[2] <= before[2]
    finally:
        daemon.stop(timeout=60)
