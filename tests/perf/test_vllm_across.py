"""vLLM across paired machines, what the pairing's glue costs: the time from the start request
to ready and from stop to every node gone, across two real paired daemons on loopback (each
with recorded H100s and the vLLM stand-in), against the same two nodes started on one machine
by the group supervisor directly; and how soon a killed follower fails the instance. Goals:
at most +1 s to ready and to stop, a lost node noticed within 2 s."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, LaunchParams
from roundhouse.core.engines.vllm_nodes import NodeInput, Ports, plan_nodes
from roundhouse.core.instances.node_group import start_group
from tests.daemon_process import DaemonProcess, path_with
from tests.fakes.launchers import console_script
from tests.processes import assert_nothing_left, free_port
from tests.support.peers import pair, peer_daemon
from tests.support.recorded_daemon import recorded_machine
from tests.unit.engines.conftest import catalog
from tests.unit.engines.test_vllm_nodes import h100_box

pytestmark = pytest.mark.perf

MODEL = "org/perf-across-big"
ROUNDS = 5


@dataclass
class Machines:
    head: DaemonProcess
    twin: DaemonProcess
    vllm: Path


@pytest.fixture(scope="module")
def machines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machines]:
    base = tmp_path_factory.mktemp("across-perf")
    vllm = console_script(base / "bin", "vllm", "tests.fakes.openai_engines", "vllm")

    def daemon(name: str) -> Any:
        home, argv, models = recorded_machine(base, name, h100_box(2), (MODEL,))
        return peer_daemon(home, name, env=path_with(vllm), argv=argv, models_dir=str(models))

    with daemon("head") as head, daemon("twin") as twin:
        pair(head, twin)
        yield Machines(head, twin, vllm)


def _nodes(master_port: int) -> dict[str, psutil.Process]:
    found: dict[str, psutil.Process] = {}
    for process in psutil.process_iter(["cmdline"]):
        argv = process.info["cmdline"] or []
        if "--master-port" in argv and argv[argv.index("--master-port") + 1] == str(master_port):
            found[argv[argv.index("--node-rank") + 1]] = process
    return found


def _until(daemon: DaemonProcess, instance: str, status: str) -> dict[str, Any]:
    with daemon.control() as client:
        while True:
            info: dict[str, Any] = client.get(f"/api/v1/instances/{instance}").json()
            if info["status"] == status:
                return info
            assert info["status"] != "failed" or status == "failed", info
            time.sleep(0.02)


def _across(machines: Machines) -> tuple[float, float]:
    """(s from the start request to ready, s from the stop request to every node gone)."""
    master_port = free_port()
    body = {"options": {"model": MODEL}, "peers": ["twin"], "master_port": master_port}
    began = time.perf_counter()
    with machines.head.control() as client:
        reply = client.post("/api/v1/engines/vllm/across", json=body, timeout=60)
    assert reply.status_code == 200, reply.text
    instance = reply.json()["instance"]["id"]
    _until(machines.head, instance, "ready")
    ready = time.perf_counter() - began
    nodes = _nodes(master_port)
    began = time.perf_counter()
    with machines.head.control() as client:
        assert client.delete(f"/api/v1/instances/{instance}", timeout=60).status_code == 200
    for process in nodes.values():
        assert_nothing_left(process.pid, process.pid, timeout_s=30)
    return ready, time.perf_counter() - began


def _here(vllm: Path) -> tuple[float, float]:
    """The same two nodes, both on this machine, through the group supervisor alone."""
    detected = DetectedEngine(id=EngineId.VLLM, found_by=FoundBy.PATH, path=str(vllm), where="t")
    inputs = [
        NodeInput(f"node-{i}", "127.0.0.1", h100_box(2), has_model=True, detected=detected)
        for i in range(2)
    ]
    params = LaunchParams(model=MODEL, port=free_port())
    plan = plan_nodes(
        catalog().spec(EngineId.VLLM), inputs, params, ports=Ports(master_port=free_port()),
        api_key="k-1",
    )  # fmt: skip

    async def main(logs: Path) -> tuple[float, float]:
        began = time.perf_counter()
        group = await start_group(
            plan, logs, headers={"Authorization": "Bearer k-1"}, ready_timeout_s=60
        )
        ready = time.perf_counter() - began
        pids = [h.pid for h in group.handles.values()]
        began = time.perf_counter()
        await group.stop()
        for pid in pids:
            assert_nothing_left(pid, pid, timeout_s=30)
        return ready, time.perf_counter() - began

    return asyncio.run(main(vllm.parent / f"logs-{time.monotonic_ns()}"))


def _lost(machines: Machines) -> float:
    """s from a follower's SIGKILL to the instance failed on the head."""
    master_port = free_port()
    body = {"options": {"model": MODEL}, "peers": ["twin"], "master_port": master_port}
    with machines.head.control() as client:
        instance = client.post("/api/v1/engines/vllm/across", json=body, timeout=60).json()
    instance_id = instance["instance"]["id"]
    _until(machines.head, instance_id, "ready")
    follower = _nodes(master_port)["1"]
    began = time.perf_counter()
    os.kill(follower.pid, signal.SIGKILL)
    _until(machines.head, instance_id, "failed")
    took = time.perf_counter() - began
    with machines.head.control() as client:
        client.delete(f"/api/v1/instances/{instance_id}", timeout=60)
    return took


def test_across_paired_machines_against_one_machines_group(machines: Machines, report: Any) -> None:
    _across(machines)  # warm: imports, engine detection, TLS contexts
    _here(machines.vllm)
    across: list[tuple[float, float]] = []
    here: list[tuple[float, float]] = []
    for _ in range(ROUNDS):
        across.append(_across(machines))
        here.append(_here(machines.vllm))
    lost = [_lost(machines) for _ in range(3)]
    ready = {
        "across": statistics.median(r for r, _ in across),
        "here": statistics.median(r for r, _ in here),
    }
    stop = {
        "across": statistics.median(s for _, s in across),
        "here": statistics.median(s for _, s in here),
    }
    report.add("ready_s_p50_across_paired", round(ready["across"], 3))
    report.add("ready_s_p50_one_machine", round(ready["here"], 3))
    report.add("ready_added_s", round(ready["across"] - ready["here"], 3))
    report.add("stop_s_p50_across_paired", round(stop["across"], 3))
    report.add("stop_s_p50_one_machine", round(stop["here"], 3))
    report.add("stop_added_s", round(stop["across"] - stop["here"], 3))
    report.add("follower_killed_to_failed_s_p50", round(statistics.median(lost), 3))
    report.add("rounds", ROUNDS)
    print(json.dumps({"across": across, "here": here, "lost": lost}))
    assert ready["across"] - ready["here"] < 1.0
    assert stop["across"] - stop["here"] < 1.0
    assert statistics.median(lost) < 2.0
