"""vLLM across machines: every node's argv and environment from their GPU inventories."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from roundhouse.api.engine_nodes import VllmExecutor
from roundhouse.api.engines import DetectedEngine, EngineId, EngineSpec, LaunchParams, LaunchPlan
from roundhouse.api.hardware import GpuInfo, GpuVendor, HardwareInventory
from roundhouse.core.engines import vllm
from roundhouse.core.engines.common import LOOPBACK, Extras, check_host, refuse
from roundhouse.core.engines.tool_parsers import AUTO_TOOL_CHOICE, REASONING_FLAG, TOOL_FLAG

# vLLM's own defaults (vllm/config/parallel.py): the torch.distributed rendezvous of the
# `mp` executor, and the port `ray start --head` takes when none is given.
DEFAULT_MASTER_PORT = 29501
DEFAULT_RAY_PORT = 6379
# `vllm serve` in a chosen Python: the console script's own module (the OpenAI server
# module that a single node runs has no --headless).
CLI_MODULE = "vllm.entrypoints.cli.main"
# The flags the planner owns on every node: the user's extra arguments may not set them.
NODE_FLAGS = (
    "--nnodes", "--node-rank", "--master-addr", "--master-port", "--headless",
    "--distributed-executor-backend", "--data-parallel-size", "-dp",
    "--data-parallel-address", "--data-parallel-rpc-port", "--data-parallel-start-rank",
)  # fmt: skip
# The API server's chat parsers, with how many values each takes. Followers serve no API, and
# the parsers are chosen from each machine's own copy of the model: left out of a follower's
# command, it is the same wherever it is built (a paired machine builds its own, ADR 39).
API_ONLY_FLAGS = {AUTO_TOOL_CHOICE: 0, vllm.ENABLE_REASONING: 0, TOOL_FLAG: 1, REASONING_FLAG: 1}
# The GPUs vLLM runs on: CUDA (NVIDIA) and ROCm (AMD).
ACCELERATORS = {GpuVendor.NVIDIA: "CUDA", GpuVendor.AMD: "ROCm"}


# mp: vLLM's multiprocessing launcher, one `vllm serve` per node, nothing else to install;
# ray: a Ray cluster the user already runs (`ray start` on every node), vLLM on the head only.
Executor = VllmExecutor


class Role(StrEnum):
    HEAD = "head"
    FOLLOWER = "follower"


@dataclass(frozen=True)
class NodeInput:
    """One machine as the planner sees it: what was recorded of it, and what it holds."""

    name: str
    # The address the other nodes reach this one at (the one the pairing agreed on).
    address: str
    inventory: HardwareInventory
    has_model: bool
    detected: DetectedEngine
    # The network interface that reaches the other nodes (GLOO/NCCL_SOCKET_IFNAME).
    interface: str | None = None
    # This node's Hugging Face cache, when it has one.
    hf_hub_cache: str | None = None


@dataclass(frozen=True)
class NodePlan:
    """What runs on one node, in rank order; `launch` is None where Roundhouse runs nothing."""

    rank: int
    name: str
    address: str
    role: Role
    launch: LaunchPlan | None
    # With Ray: the `ray start` line the user runs on this node first (described, not run).
    ray_command: tuple[str, ...] = ()

    @property
    def serves_api(self) -> bool:
        return self.role is Role.HEAD


@dataclass(frozen=True)
class MultiNodePlan:
    """The whole instance: every node, and the order they start and stop in."""

    executor: Executor
    tensor_parallel: int
    pipeline_parallel: int
    gpus_per_node: int
    gpu_name: str
    master_addr: str
    master_port: int
    nodes: tuple[NodePlan, ...]
    # Ranks, in the order they are started and stopped.
    start_order: tuple[int, ...]
    stop_order: tuple[int, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def head(self) -> NodePlan:
        return self.nodes[0]

    @property
    def followers(self) -> tuple[NodePlan, ...]:
        return self.nodes[1:]


@dataclass(frozen=True)
class Ports:
    master_port: int = DEFAULT_MASTER_PORT
    ray_port: int = DEFAULT_RAY_PORT


def accelerators(inventory: HardwareInventory) -> list[GpuInfo]:
    """The GPUs of a node that vLLM can use (CUDA or ROCm)."""
    return [gpu for gpu in inventory.gpus if gpu.vendor in ACCELERATORS]


def _is_loopback(address: str) -> bool:
    if address in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _node_problems(node: NodeInput) -> list[str]:
    problems: list[str] = []
    if node.inventory.os != "Linux":
        problems.append(
            f"{node.name} runs {node.inventory.os}; vLLM runs on Linux only. Leave it out, "
            "or use llama.cpp's RPC split there."
        )
    elif not accelerators(node.inventory):
        seen = ", ".join(g.name for g in node.inventory.gpus) or "no GPU"
        problems.append(
            f"{node.name} has no CUDA or ROCm GPU ({seen}); vLLM needs one on every node."
        )
    if not node.has_model:
        problems.append(
            f"{node.name} does not have the model: download it there first (every node "
            "loads its own copy from its own disk)."
        )
    if not node.address.strip():
        problems.append(f"{node.name} has no address the other nodes can reach.")
    return problems


def _kind(gpus: list[GpuInfo]) -> tuple[str, int]:
    names = sorted({gpu.name for gpu in gpus})
    return " + ".join(names), len(gpus)


def _same_gpus(nodes: Sequence[NodeInput]) -> list[str]:
    """vLLM splits the model evenly: every node needs the same GPUs, as many of them."""
    kinds = {node.name: _kind(accelerators(node.inventory)) for node in nodes}
    usable = {name: kind for name, kind in kinds.items() if kind[1]}
    if len(set(usable.values())) <= 1:
        return []
    listed = "; ".join(f"{name}: {count} x {gpu}" for name, (gpu, count) in usable.items())
    vendors = {ACCELERATORS[g.vendor] for node in nodes for g in accelerators(node.inventory)}
    mixed = " CUDA and ROCm GPUs cannot work together in one model." if len(vendors) > 1 else ""
    return [
        "The nodes differ in GPU kind or count "
        f"({listed}). vLLM splits the model evenly, so every node needs the same GPUs, "
        f"as many of them.{mixed} Choose nodes that match."
    ]


def _address_problems(nodes: Sequence[NodeInput], ports: Ports, api_port: int) -> list[str]:
    problems: list[str] = []
    addresses = {node.address for node in nodes}
    if len(addresses) > 1:
        local = [node.name for node in nodes if _is_loopback(node.address)]
        if local:
            problems.append(
                f"{', '.join(local)} gave a loopback address, which the other machines "
                "cannot reach: use the address the pairing agreed on."
            )
    for what, port in (("master", ports.master_port), ("Ray", ports.ray_port)):
        if not 1024 <= port <= 65535:
            problems.append(
                f"The {what} port {port} is not one a user's program may open: "
                "choose one from 1024 to 65535."
            )
    if ports.master_port == api_port:
        problems.append(
            f"The master port {ports.master_port} is the head's API port too: choose another."
        )
    return problems


def _param_problems(params: LaunchParams, tp: int, pp: int) -> list[str]:
    problems: list[str] = []
    if params.tensor_parallel not in (None, tp):
        problems.append(
            f"Tensor parallel is the GPUs of one node here ({tp}), not "
            f"{params.tensor_parallel}: leave it unset."
        )
    if params.pipeline_parallel not in (None, pp):
        problems.append(
            f"Pipeline parallel is the number of nodes here ({pp}), not "
            f"{params.pipeline_parallel}: leave it unset."
        )
    owned = [a for a in params.extra_args if a.split("=", 1)[0] in NODE_FLAGS]
    if owned:
        problems.append(
            f"Roundhouse sets {', '.join(owned)} on every node itself: remove "
            f"{'it' if len(owned) == 1 else 'them'} from the extra arguments."
        )
    return problems


def _serve_argv(plan: LaunchPlan, detected: DetectedEngine, model: str) -> list[str]:
    """`vllm serve MODEL ...`: the module form of one node has no --headless, the CLI has."""
    argv = list(plan.argv)
    if detected.path:
        return argv
    # [python, -m, api_server, --model, MODEL, ...] -> [python, -m, cli.main, serve, MODEL, ...]
    assert detected.python is not None
    return [detected.python, "-m", CLI_MODULE, "serve", model, *argv[5:]]


def _without_api_flags(argv: list[str]) -> list[str]:
    kept: list[str] = []
    skip = 0
    for arg in argv:
        if skip:
            skip -= 1
            continue
        name, joined, _ = arg.partition("=")
        if name in API_ONLY_FLAGS:
            skip = 0 if joined else API_ONLY_FLAGS[name]
            continue
        kept.append(arg)
    return kept


def _node_env(node: NodeInput) -> dict[str, str]:
    # VLLM_HOST_IP: the address this node tells the others (vLLM's own guess may pick a
    # docker bridge); the socket interfaces keep Gloo and NCCL (RCCL) on the same network.
    env = {"VLLM_HOST_IP": node.address}
    if node.interface:
        env["GLOO_SOCKET_IFNAME"] = node.interface
        env["NCCL_SOCKET_IFNAME"] = node.interface
    return env


def plan_nodes(
    spec: EngineSpec,
    nodes: Sequence[NodeInput],
    params: LaunchParams,
    *,
    executor: Executor = Executor.MP,
    ports: Ports | None = None,
    api_key: str | None = None,
    media_domains: Sequence[str] = (),
) -> MultiNodePlan:
    """Every node's command for one model across `nodes` (the first is the head); runs nothing.

    Tensor parallel inside a node (its GPUs), pipeline parallel across nodes (their
    number). Raises InvalidInputError with every reason at once, in words, when the nodes
    cannot serve the model together. The key reaches the head only: followers serve no API.
    """
    if spec.id is not EngineId.VLLM:
        raise ValueError(f"the multi-node planner is vLLM's, not {spec.id}'s")
    ports = ports or Ports()
    if len(nodes) < 2:
        refuse("Choose at least two machines to split a model across; one runs it on its own.")
    names = [node.name for node in nodes]
    if len(set(names)) != len(names):
        refuse("A machine is listed twice: name each machine once.")
    check_host(params)
    problems = [p for node in nodes for p in _node_problems(node)]
    problems += _same_gpus(nodes)
    head = nodes[0]
    tp = len(accelerators(head.inventory)) or 1
    pp = len(nodes)
    problems += _address_problems(nodes, ports, params.port)
    problems += _param_problems(params, tp, pp)
    if problems:
        refuse("vLLM cannot run this model across these machines: " + " ".join(problems))
    gpu_name, _ = _kind(accelerators(head.inventory))
    shared = params.model_copy(update={"tensor_parallel": tp, "pipeline_parallel": pp})
    built: list[NodePlan] = []
    for rank, node in enumerate(nodes):
        role = Role.HEAD if rank == 0 else Role.FOLLOWER
        launch, ray_command = node_launch(
            spec,
            node,
            shared,
            rank=rank,
            master_addr=head.address,
            executor=executor,
            ports=ports,
            # The gateway's key stays on this machine: followers serve no API.
            api_key=api_key if role is Role.HEAD else None,
            media_domains=media_domains,
        )
        built.append(NodePlan(rank, node.name, node.address, role, launch, ray_command))
    ranks = tuple(range(pp))
    notes = (
        f"tensor parallel {tp} (the {gpu_name} GPUs of each node) x pipeline parallel {pp} "
        f"(nodes), the {executor.value} executor",
    )
    return MultiNodePlan(
        executor=executor,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        gpus_per_node=tp,
        gpu_name=gpu_name,
        master_addr=head.address,
        master_port=ports.master_port,
        nodes=tuple(built),
        # The head first: its rank 0 holds torch.distributed's rendezvous at
        # master-addr:master-port, which the followers' workers connect to (and retry until
        # it answers); its API opens only once every follower has joined and the model is
        # loaded, so readiness is the head's, checked after the followers started.
        start_order=ranks,
        # The head first too: it stops taking requests, then the followers go.
        stop_order=ranks,
        notes=notes,
    )


def node_launch(
    spec: EngineSpec,
    node: NodeInput,
    shared: LaunchParams,
    *,
    rank: int,
    master_addr: str,
    executor: Executor = Executor.MP,
    ports: Ports | None = None,
    api_key: str | None = None,
    media_domains: Sequence[str] = (),
) -> tuple[LaunchPlan | None, tuple[str, ...]]:
    """One node's launch (None: a Ray worker, which Roundhouse does not run) and its Ray line.

    `shared` holds the whole instance's parameters, tensor and pipeline sizes set (the
    pipeline size is the number of nodes). A paired machine asked to run a node builds it
    again with this, from its own vLLM, and runs only what it built (ADR 39).
    """
    ports = ports or Ports()
    pp = shared.pipeline_parallel or 1
    role = Role.HEAD if rank == 0 else Role.FOLLOWER
    extras = Extras(
        api_key=api_key, hf_hub_cache=node.hf_hub_cache, media_domains=tuple(media_domains)
    )
    one = vllm.build(spec, node.detected, shared, extras)
    argv = _serve_argv(one, node.detected, shared.model or "")
    if role is Role.FOLLOWER:
        argv = _without_api_flags(argv)
    env = {**one.env, **_node_env(node)}
    ray_command: tuple[str, ...] = ()
    if executor is Executor.MP:
        argv += ["--distributed-executor-backend", "mp", "--nnodes", str(pp),
                 "--node-rank", str(rank), "--master-addr", master_addr,
                 "--master-port", str(ports.master_port)]  # fmt: skip
        if role is Role.FOLLOWER:
            argv.append("--headless")
    else:
        # Ray: the cluster is the user's; vLLM starts once, on the head, and Ray places
        # the workers. nnodes > 1 is refused by vLLM with Ray (it is the mp launcher's).
        argv += ["--distributed-executor-backend", "ray"]
        # ray.init() with no address joins the newest cluster this machine started, or
        # starts a one-node cluster of its own: the address makes it the planned cluster.
        env["RAY_ADDRESS"] = ray_address(master_addr, ports.ray_port)
        ray_command = (
            ("ray", "start", "--head", f"--port={ports.ray_port}",
             f"--node-ip-address={node.address}")
            if role is Role.HEAD
            else ("ray", "start", f"--address={ray_address(master_addr, ports.ray_port)}",
                  f"--node-ip-address={node.address}")
        )  # fmt: skip
    if executor is Executor.RAY and role is Role.FOLLOWER:
        return None, ray_command
    return one.model_copy(update={"argv": tuple(argv), "env": env}), ray_command


def ray_address(head_address: str, ray_port: int) -> str:
    """The Ray head's GCS address, as `ray start --address` and RAY_ADDRESS take it."""
    host = f"[{head_address}]" if ":" in head_address else head_address
    return f"{host}:{ray_port}"


def describe(plan: MultiNodePlan) -> list[str]:
    """Every node's command as a person would type it, secrets hidden, in start order."""
    lines: list[str] = []
    for rank in plan.start_order:
        node = plan.nodes[rank]
        lines.append(f"# node {rank} ({node.role.value}): {node.name} at {node.address}")
        if node.ray_command:
            lines.append(" ".join(node.ray_command))
        if node.launch is not None:
            env = " ".join(f"{k}={v}" for k, v in sorted(node.launch.redacted_env().items()))
            lines.append(f"{env} {' '.join(node.launch.argv)}".strip())
    return lines
