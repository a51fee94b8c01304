"""The user's Ray cluster: `ray status` reports as Ray prints them, the `ray` beside vLLM,
and the head's RAY_ADDRESS (the cluster vLLM joins is the one checked)."""

from __future__ import annotations

from pathlib import Path

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy
from roundhouse.core.engines.host import LocalEngineHost
from roundhouse.core.engines.ray_cluster import RayCluster, ray_program, read_status
from roundhouse.core.engines.vllm_nodes import Executor, plan_nodes, ray_address
from tests.unit.engines.test_vllm_nodes import PARAMS, SPEC, h100_box, node

# Ray 2.4x, two nodes that joined (`ray status` on the head).
TWO_NODES = """\
======== Autoscaler status: 2025-11-12 13:23:16.804602 ========
Node status
---------------------------------------------------------------
Active:
 1 node_35afdf3ae762c5562e26215333773093338dabcd47b9f5ae4d1081b0
 1 node_104ceb8ab69f5a9e0339138fd49a4152e58b48bbbc7e0998853aebe5
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/128.0 CPU
 0.0/2.0 GPU
 0B/351.65GiB memory
 0B/150.71GiB object_store_memory

From request_resources:
 (none)
Pending Demands:
 (no resource demands)
"""
# An older report: node groups by type, some idle; "Usage:".
BY_TYPE = """\
Node status
---------------------------------------------------------------
Active:
 1 head
Idle:
 2 4xL40S:48CPU-384GB
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Usage:
 0.0/96.0 CPU
 0.0/8.0 GPU
 0B/800.00GiB memory

Demands:
 (no resource demands)
"""


def test_the_nodes_and_gpus_of_a_report_are_read() -> None:
    assert read_status(TWO_NODES, "10.0.0.1:6379") == RayCluster("10.0.0.1:6379", 2, 2.0)
    assert read_status(BY_TYPE, "h:1") == RayCluster("h:1", 3, 8.0)


def test_what_is_not_a_report_is_none() -> None:
    said = "ConnectionError: Could not find any running Ray instance."
    assert read_status(said, "h:1") is None
    assert read_status("", "h:1") is None


def test_the_ray_beside_vllm_comes_before_the_one_on_path(tmp_path: Path) -> None:
    venv, other = tmp_path / "venv" / "bin", tmp_path / "other"
    for folder in (venv, other):
        folder.mkdir(parents=True)
        (folder / "ray").write_text("#!/bin/sh\n")
        (folder / "ray").chmod(0o755)
    host = LocalEngineHost({"PATH": str(other)})
    beside = DetectedEngine(
        id=EngineId.VLLM, found_by=FoundBy.PATH, path=str(venv / "vllm"), where="test"
    )
    assert ray_program(beside, host) == str(venv / "ray")
    elsewhere = beside.model_copy(update={"path": str(tmp_path / "vllm")})
    assert ray_program(elsewhere, host) == str(other / "ray")
    assert ray_program(elsewhere, LocalEngineHost({"PATH": ""})) is None


def test_the_head_joins_the_planned_cluster_not_one_of_its_own() -> None:
    nodes = [node("a", "192.168.1.10", h100_box(2)), node("b", "192.168.1.11", h100_box(2))]
    plan = plan_nodes(SPEC, nodes, PARAMS, executor=Executor.RAY)
    assert plan.head.launch is not None
    assert plan.head.launch.env["RAY_ADDRESS"] == "192.168.1.10:6379"
    assert ray_address("fd00::1", 6380) == "[fd00::1]:6380"
