"""vLLM across nodes, several "nodes" on loopback: the stand-in's real processes, started in
order, served as one instance, and stopped together when one of them dies."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
from pathlib import Path

import httpx
import pytest

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, LaunchParams
from roundhouse.core.engines.vllm_nodes import MultiNodePlan, NodeInput, NodePlan, Ports, plan_nodes
from roundhouse.core.instances.node_group import (
    NodeHandle,
    NodeLostError,
    start_group,
    start_node_here,
)
from roundhouse.core.supervise import ExitKind
from tests.fakes.launchers import console_script
from tests.processes import alive, assert_nothing_left, free_port
from tests.unit.engines.conftest import catalog
from tests.unit.engines.test_vllm_nodes import h100_box

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="POSIX process groups")
SPEC = catalog().spec(EngineId.VLLM)
KEY = {"Authorization": "Bearer k-1"}  # the instance's key goes with every probe


def the_plan(tmp_path: Path, nodes: int = 3) -> tuple[MultiNodePlan, int]:
    vllm = console_script(tmp_path / "bin", "vllm", "tests.fakes.openai_engines", "vllm")
    detected = DetectedEngine(id=EngineId.VLLM, found_by=FoundBy.PATH, path=str(vllm), where="t")
    inputs = [
        NodeInput(f"node-{i}", "127.0.0.1", h100_box(2), has_model=True, detected=detected)
        for i in range(nodes)
    ]
    port = free_port()
    record = tmp_path / "argv.jsonl"
    params = LaunchParams(
        model="org/big",
        port=port,
        extra_args=(
            "--load-seconds",
            "0.2",
            "--join-timeout",
            "20",
            "--record-requests",
            str(record),
        ),
    )
    plan = plan_nodes(SPEC, inputs, params, ports=Ports(master_port=free_port()), api_key="k-1")
    return plan, port


def test_the_nodes_start_in_order_serve_as_one_and_stop_together(tmp_path: Path) -> None:
    plan, port = the_plan(tmp_path)
    started: list[int] = []

    async def recording(node: NodePlan, log_path: Path) -> NodeHandle:
        started.append(node.rank)
        return await start_node_here(node, log_path)

    async def main() -> tuple[dict[int, int], list[str], dict[int, ExitKind]]:
        group = await start_group(
            plan, tmp_path / "logs", start_node=recording, headers=KEY, ready_timeout_s=30
        )
        pids = {rank: h.pid for rank, h in group.handles.items()}
        assert all(alive(pid) for pid in pids.values())
        async with httpx.AsyncClient(trust_env=False) as http:
            models = await http.get(f"http://127.0.0.1:{port}/v1/models", headers=KEY)
        ids = [m["id"] for m in models.json()["data"]]
        outcomes = await group.stop()
        return pids, ids, {rank: o.kind for rank, o in outcomes.items()}

    pids, ids, kinds = asyncio.run(main())
    assert started == [0, 1, 2]  # the head first: its rank 0 holds the rendezvous
    assert ids == ["org/big"]
    assert set(kinds) == {0, 1, 2}
    for pid in pids.values():
        assert_nothing_left(pid, pid)
    head_log = (tmp_path / "logs" / "node-0.log").read_text()
    assert "node rank 1 joined" in head_log and "node rank 2 joined" in head_log
    # Each node got its own rank, and the followers ran --headless.
    recorded = [json.loads(line) for line in (tmp_path / "argv.jsonl").read_text().splitlines()]
    ranks = sorted(r["argv"][r["argv"].index("--node-rank") + 1] for r in recorded)
    assert ranks == ["0", "1", "2"]
    assert all(("--headless" in r["argv"]) == (r["argv"][r["argv"].index("--node-rank") + 1] != "0")
               for r in recorded)  # fmt: skip
    assert {r["vllm_host_ip"] for r in recorded} == {"127.0.0.1"}


def test_one_node_killed_fails_the_instance_and_stops_the_others(tmp_path: Path) -> None:
    plan, _ = the_plan(tmp_path)

    async def main() -> tuple[dict[int, int], int, bool, str]:
        group = await start_group(plan, tmp_path / "logs", headers=KEY, ready_timeout_s=30)
        pids = {rank: h.pid for rank, h in group.handles.items()}
        watching = asyncio.ensure_future(group.wait())
        os.kill(pids[2], signal.SIGKILL)
        end = await asyncio.wait_for(watching, 30)
        return pids, end.first.rank, end.by_us, str(end.error())

    pids, first, by_us, error = asyncio.run(main())
    assert first == 2 and not by_us
    assert "Node 2 (node-2, the follower) ended while the instance served" in error
    assert "the other nodes have been stopped" in error
    for pid in pids.values():
        assert_nothing_left(pid, pid)


def test_a_node_lost_while_starting_stops_every_node_started(tmp_path: Path) -> None:
    plan, port = the_plan(tmp_path)
    pids: dict[int, int] = {}

    async def dies(node: NodePlan, log_path: Path) -> NodeHandle:
        handle = await start_node_here(node, log_path)
        pids[node.rank] = handle.pid
        if node.rank == 1:
            os.kill(handle.pid, signal.SIGKILL)
        return handle

    starting = start_group(
        plan, tmp_path / "logs", start_node=dies, headers=KEY, ready_timeout_s=30
    )
    with pytest.raises(NodeLostError) as caught:
        asyncio.run(starting)
    assert caught.value.node.rank == 1
    assert "while the instance started" in caught.value.detail
    assert set(pids) == {0, 1, 2}
    for pid in pids.values():
        assert_nothing_left(pid, pid)
    with socket.socket() as probe:  # the head's API port is free again
        probe.bind(("127.0.0.1", port))
