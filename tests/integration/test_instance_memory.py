"""After a load, the engine's real figures beside the estimate: the tiny model in the real
llama-server through a real daemon, its buffers read from its log and compared.

Tolerances: the weights and the KV cache are sized exactly by the estimator (the tiny model
is F32: no quantization blocks to round), so they must agree to the log's resolution
(llama-server prints MiB with two decimals: 0.01 MiB) or 1%, whichever is larger. The
compute buffer of a model this small is mostly fixed overheads (graph nodes, the logits of
a 302-token vocabulary), which the estimator sizes for real models: within a factor of 2.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.fit import DeviceKind
from roundhouse.api.instance_memory import InstanceMemory
from roundhouse.api.instances import InstanceInfo, StartRequest
from roundhouse.client import DaemonClient
from tests.daemon_process import DaemonProcess, path_with, running_daemon, start_ready

MIB = 1024**2
LOG_RESOLUTION = 0.01 * MIB
MEMORY_TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def daemon(
    llama_server_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DaemonProcess]:
    home = tmp_path_factory.mktemp("memory") / "home"
    with running_daemon(home, env=path_with(llama_server_binary)) as process:
        yield process


def _request(model: Path, *extra: str, memory_report: bool = False) -> StartRequest:
    options = InstanceOptions(
        model=str(model), ctx_size=512, parallel=1, extra_args=extra, memory_report=memory_report
    )
    return StartRequest(engine=EngineId.LLAMA_CPP, options=options)


async def _memory(daemon: DaemonProcess, info: InstanceInfo) -> InstanceInfo:
    """The instance once its memory is read (it is, just after it turns ready)."""
    async with DaemonClient(daemon.url, daemon.token) as client:
        deadline = asyncio.get_running_loop().time() + MEMORY_TIMEOUT_S
        while info.memory is None:
            assert asyncio.get_running_loop().time() < deadline, f"no memory read: {info}"
            await asyncio.sleep(0.05)
            info = await client.instance(info.id)
    return info


async def _stop(daemon: DaemonProcess, instance_id: str) -> None:
    async with DaemonClient(daemon.url, daemon.token) as client:
        await client.stop_instance(instance_id)


def _close(estimate: int, actual: int) -> bool:
    return abs(estimate - actual) <= max(LOG_RESOLUTION, 0.01 * actual)


def roundhouse(daemon: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    assert daemon.home.root is not None
    return subprocess.run(
        [sys.executable, "-m", "roundhouse", "--home", str(daemon.home.root), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )


def test_the_real_load_beside_the_estimate(daemon: DaemonProcess, tiny_gguf: Path) -> None:
    # This build logs its buffers at verbosity 4 (its default is 3): the memory report.
    started = asyncio.run(start_ready(daemon, _request(tiny_gguf, memory_report=True)))
    try:
        info = asyncio.run(_memory(daemon, started))
        memory = info.memory
        assert memory is not None
        actual, estimate = memory.actual, memory.estimate
        assert actual is not None, memory.notes
        assert estimate is not None, memory.notes
        # The tests' llama-server is a CPU build: everything in RAM.
        [cpu] = actual.devices
        assert cpu.device == "CPU" and cpu.kind == DeviceKind.CPU
        assert cpu.weights_bytes > 0 and cpu.kv_bytes > 0 and cpu.compute_bytes > 0
        assert not actual.cpu_fallback
        # The same run on both sides: 512 tokens, one slot.
        assert (estimate.context_length, estimate.n_parallel) == (512, 1)
        [ram] = [d for d in estimate.devices if d.kind == DeviceKind.CPU]
        assert _close(ram.weights_bytes, cpu.weights_bytes), (ram, cpu)
        assert _close(ram.kv_bytes, cpu.kv_bytes), (ram, cpu)
        assert cpu.compute_bytes / 2 <= ram.compute_bytes <= cpu.compute_bytes * 2, (ram, cpu)

        table = roundhouse(daemon, "engines", "memory", info.id[:6])
        assert table.returncode == 0, table.stderr
        assert "estimate vs actual" in table.stdout
        assert "RAM" in table.stdout and "KV cache" in table.stdout
        as_json = roundhouse(daemon, "engines", "memory", info.id, "--json")
        assert as_json.returncode == 0, as_json.stderr
        assert InstanceMemory.model_validate(json.loads(as_json.stdout)) == memory
    finally:
        asyncio.run(_stop(daemon, started.id))


def test_at_the_default_verbosity_the_figures_or_how_to_get_them(
    daemon: DaemonProcess, tiny_gguf: Path
) -> None:
    started = asyncio.run(start_ready(daemon, _request(tiny_gguf)))
    try:
        memory = asyncio.run(_memory(daemon, started)).memory
        assert memory is not None and memory.estimate is not None
        # Older builds log the buffers at their default verbosity; newer ones only at 4.
        if memory.actual is None:
            assert any("--memory-report" in note for note in memory.notes), memory.notes
    finally:
        asyncio.run(_stop(daemon, started.id))
