"""vLLM across machines: every node's argv and environment from recorded GPU inventories."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path

import pytest

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, LaunchParams
from roundhouse.api.hardware import HardwareInventory
from roundhouse.base.resources import resource_path
from roundhouse.core.engines.vllm_nodes import (
    Executor,
    NodeInput,
    Ports,
    Role,
    describe,
    plan_nodes,
)
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.hardware.inventory import collect_inventory
from tests.fixtures.nvml.fake_pynvml import FakePynvml
from tests.unit.engines.conftest import catalog
from tests.unit.hardware.conftest import machine

H100 = "h100_sxm_gpu_burn_114.json"
VLLM = "/srv/vllm/bin/vllm"
MODEL = "meta-llama/Llama-3.1-70B-Instruct"
SPEC = catalog().spec(EngineId.VLLM)


@cache
def h100_box(gpus: int) -> HardwareInventory:
    """The recorded Linux box with `gpus` copies of the recorded H100 (NVML replay)."""
    nvml = FakePynvml.load(H100)
    one = nvml.record["devices"][0]
    nvml.record["devices"] = []
    for i in range(gpus):
        device = copy.deepcopy(one)
        device["nvmlDeviceGetUUID"] = {"ok": f"GPU-0000000{i}-0000-0000-0000-000000000000"}
        nvml.record["devices"].append(device)
    return collect_inventory(
        machine("linux-epyc-local"), models_dir=Path("/nowhere/models"), nvml_module=nvml
    )


@cache
def recorded(name: str) -> HardwareInventory:
    return collect_inventory(
        machine(name), models_dir=Path("/nowhere/models"), nvml_module=FakePynvml.without_driver()
    )


def found(path: str | None = VLLM, python: str | None = None) -> DetectedEngine:
    return DetectedEngine(
        id=EngineId.VLLM,
        found_by=FoundBy.PYTHON if python else FoundBy.PATH,
        path=path,
        python=python,
        module=SPEC.python_modules[0] if python else None,
        where="test",
    )


def node(
    name: str,
    address: str,
    inventory: HardwareInventory,
    *,
    has_model: bool = True,
    interface: str | None = None,
    detected: DetectedEngine | None = None,
) -> NodeInput:
    return NodeInput(
        name=name,
        address=address,
        inventory=inventory,
        has_model=has_model,
        detected=detected or found(),
        interface=interface,
    )


PARAMS = LaunchParams(model=MODEL, port=41006, served_name="llama-70b", max_model_len=32768)


def test_tensor_parallel_inside_a_node_pipeline_parallel_across_nodes() -> None:
    nodes = [
        node("gpu-a", "192.168.1.10", h100_box(4), interface="enp5s0"),
        node("gpu-b", "192.168.1.11", h100_box(4), interface="enp5s0"),
    ]
    plan = plan_nodes(SPEC, nodes, PARAMS, api_key="k-123")
    assert (plan.tensor_parallel, plan.pipeline_parallel) == (4, 2)
    assert plan.gpu_name == "NVIDIA H100 80GB HBM3"
    head, follower = plan.nodes
    assert head.role is Role.HEAD and follower.role is Role.FOLLOWER
    assert head.launch is not None and follower.launch is not None
    common = (
        VLLM, "serve", MODEL,
        "--host", "127.0.0.1", "--port", "41006",
        "--served-model-name", "llama-70b",
        "-tp", "4", "-pp", "2",
        "--max-model-len", "32768",
        "--distributed-executor-backend", "mp",
        "--nnodes", "2",
    )  # fmt: skip
    assert head.launch.argv == (
        *common, "--node-rank", "0", "--master-addr", "192.168.1.10", "--master-port", "29501",
    )  # fmt: skip
    assert follower.launch.argv == (
        *common, "--node-rank", "1", "--master-addr", "192.168.1.10", "--master-port", "29501",
        "--headless",
    )  # fmt: skip
    guard = str(resource_path("engines", "guard"))
    assert head.launch.env == {
        "VLLM_API_KEY": "k-123",
        "ROUNDHOUSE_ENGINE_KEY": "k-123",
        "PYTHONPATH": guard,
        "VLLM_HOST_IP": "192.168.1.10",
        "GLOO_SOCKET_IFNAME": "enp5s0",
        "NCCL_SOCKET_IFNAME": "enp5s0",
    }
    # The key stays on this machine: a follower serves no API.
    assert follower.launch.env == {
        "VLLM_HOST_IP": "192.168.1.11",
        "GLOO_SOCKET_IFNAME": "enp5s0",
        "NCCL_SOCKET_IFNAME": "enp5s0",
    }
    assert head.launch.secret_env == ("VLLM_API_KEY", "ROUNDHOUSE_ENGINE_KEY")
    assert plan.start_order == (0, 1) and plan.stop_order == (0, 1)
    assert head.serves_api and not follower.serves_api


def test_pipeline_across_three_rocm_nodes_with_one_gpu_each() -> None:
    rx = recorded("linux-amd-rx7900xt")
    nodes = [node(f"rx-{i}", f"10.0.0.{i + 1}", rx) for i in range(3)]
    plan = plan_nodes(SPEC, nodes, PARAMS, ports=Ports(master_port=31000))
    assert (plan.tensor_parallel, plan.pipeline_parallel) == (1, 3)
    for rank, one in enumerate(plan.nodes):
        assert one.launch is not None
        argv = one.launch.argv
        assert argv[argv.index("-tp") + 1] == "1" and argv[argv.index("-pp") + 1] == "3"
        assert argv[argv.index("--node-rank") + 1] == str(rank)
        assert argv[argv.index("--master-addr") + 1] == "10.0.0.1"
        assert argv[argv.index("--master-port") + 1] == "31000"
        assert ("--headless" in argv) == (rank > 0)
        assert one.launch.env == {"VLLM_HOST_IP": f"10.0.0.{rank + 1}"}
    assert plan.start_order == (0, 1, 2)


def test_vllm_in_a_chosen_python_runs_its_cli_module() -> None:
    python = found(path=None, python="/opt/venv/bin/python")
    nodes = [node(n, "127.0.0.1", h100_box(1), detected=python) for n in ("a", "b")]
    plan = plan_nodes(SPEC, nodes, PARAMS)
    assert plan.nodes[1].launch is not None
    assert plan.nodes[1].launch.argv[:5] == (
        "/opt/venv/bin/python", "-m", "vllm.entrypoints.cli.main", "serve", MODEL,
    )  # fmt: skip
    assert "--model" not in plan.nodes[1].launch.argv


def test_ray_runs_vllm_on_the_head_only_and_describes_the_cluster() -> None:
    nodes = [node("a", "192.168.1.10", h100_box(2)), node("b", "192.168.1.11", h100_box(2))]
    plan = plan_nodes(SPEC, nodes, PARAMS, executor=Executor.RAY)
    head, follower = plan.nodes
    assert head.launch is not None and follower.launch is None
    assert head.launch.argv[-2:] == ("--distributed-executor-backend", "ray")
    assert "--nnodes" not in head.launch.argv  # vLLM refuses nnodes > 1 with Ray
    assert head.ray_command == (
        "ray", "start", "--head", "--port=6379", "--node-ip-address=192.168.1.10",
    )  # fmt: skip
    assert follower.ray_command == (
        "ray", "start", "--address=192.168.1.10:6379", "--node-ip-address=192.168.1.11",
    )  # fmt: skip


def test_describe_hides_the_key_and_lists_every_node_in_start_order() -> None:
    nodes = [node("a", "192.168.1.10", h100_box(1)), node("b", "192.168.1.11", h100_box(1))]
    lines = describe(plan_nodes(SPEC, nodes, PARAMS, api_key="k-secret"))
    assert lines[0] == "# node 0 (head): a at 192.168.1.10"
    assert lines[2] == "# node 1 (follower): b at 192.168.1.11"
    assert "VLLM_API_KEY=***" in lines[1] and "k-secret" not in "\n".join(lines)
    assert lines[3].endswith("--headless")


def refusal(nodes: list[NodeInput], params: LaunchParams = PARAMS, **kw: object) -> str:
    with pytest.raises(InvalidInputError) as caught:
        plan_nodes(SPEC, nodes, params, **kw)  # type: ignore[arg-type]
    return str(caught.value)


def test_refused_when_the_nodes_differ_in_gpu_count() -> None:
    why = refusal([node("a", "10.0.0.1", h100_box(2)), node("b", "10.0.0.2", h100_box(1))])
    assert "differ in GPU kind or count" in why
    assert "a: 2 x NVIDIA H100 80GB HBM3; b: 1 x NVIDIA H100 80GB HBM3" in why


def test_refused_when_the_nodes_differ_in_gpu_kind_cuda_and_rocm() -> None:
    why = refusal(
        [node("a", "10.0.0.1", h100_box(1)), node("b", "10.0.0.2", recorded("linux-amd-rx7900xt"))]
    )
    assert "differ in GPU kind or count" in why
    assert "CUDA and ROCm GPUs cannot work together" in why


def test_refused_when_the_model_is_missing_on_one_node() -> None:
    why = refusal(
        [node("a", "10.0.0.1", h100_box(1)), node("b", "10.0.0.2", h100_box(1), has_model=False)]
    )
    assert "b does not have the model: download it there first" in why
    assert "a does not" not in why


def test_refused_without_a_cuda_or_rocm_gpu_and_off_linux() -> None:
    why = refusal(
        [
            node("box", "10.0.0.1", recorded("linux-rpi5")),
            node("mac", "10.0.0.2", recorded("mac-m1-pro")),
            node("win", "10.0.0.3", recorded("windows-rtx4090")),
        ]
    )
    assert "box has no CUDA or ROCm GPU (no GPU)" in why
    assert "mac runs Darwin; vLLM runs on Linux only" in why
    assert "win runs Windows; vLLM runs on Linux only" in why


def test_refused_with_every_reason_at_once() -> None:
    why = refusal(
        [
            node("a", "10.0.0.1", h100_box(2)),
            node("b", "127.0.0.1", h100_box(1), has_model=False),
        ],
        PARAMS.model_copy(update={"tensor_parallel": 8, "extra_args": ("--nnodes=3",)}),
        ports=Ports(master_port=80),
    )
    for part in (
        "b does not have the model",
        "differ in GPU kind or count",
        "b gave a loopback address",
        "The master port 80 is not one",
        "Tensor parallel is the GPUs of one node here (2), not 8",
        "Roundhouse sets --nnodes=3 on every node itself",
    ):
        assert part in why


def test_refused_for_one_node_a_name_twice_and_the_api_port_as_master_port() -> None:
    one = node("a", "10.0.0.1", h100_box(1))
    assert "at least two machines" in refusal([one])
    assert "listed twice" in refusal([one, one])
    why = refusal([one, node("b", "10.0.0.2", h100_box(1))], ports=Ports(master_port=41006))
    assert "The master port 41006 is the head's API port too" in why
