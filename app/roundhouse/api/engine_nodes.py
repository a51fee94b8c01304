"""vLLM across machines: the nodes a user gives and every node's command that Roundhouse plans."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from roundhouse.api.engines import DetectedEngine, InstanceOptions
from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.instances import ExitInfo, InstanceInfo


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class VllmExecutor(StrEnum):
    """How vLLM reaches the other nodes."""

    # vLLM's multiprocessing launcher: one `vllm serve` per node (--nnodes, --headless).
    MP = "mp"
    # A Ray cluster the user runs already; vLLM starts on the head only.
    RAY = "ray"


class NodeGiven(_Frozen):
    """One machine of the split, in the order of ranks (the first is the head)."""

    name: str = Field(min_length=1)
    address: str = Field(description="the address the other nodes reach this one at")
    inventory: HardwareInventory | None = Field(
        default=None, description="that machine's recorded hardware; none: this machine's"
    )
    has_model: bool | None = Field(
        default=None,
        description="whether the machine holds the model; none: looked up on this machine, "
        "taken as yes on another",
    )
    interface: str | None = Field(
        default=None, description="the network interface that reaches the other nodes"
    )


class VllmNodesRequest(_Frozen):
    """`POST /api/v1/engines/vllm/nodes/plan`: plan one model across machines; runs nothing."""

    options: InstanceOptions
    nodes: list[NodeGiven] = Field(min_length=1)
    executor: VllmExecutor = VllmExecutor.MP
    master_port: int = Field(default=29501, description="torch.distributed's rendezvous")
    ray_port: int = 6379
    port: int | None = Field(
        default=None, ge=1, le=65535, description="the head's API port; none: a free one"
    )


class NodeCommand(_Frozen):
    rank: int
    name: str
    address: str
    role: str = Field(description="head or follower")
    serves_api: bool
    argv: list[str] = Field(description="empty where Roundhouse runs nothing (a Ray worker)")
    env: dict[str, str] = Field(description="added to the environment; secrets shown as ***")
    ray_command: list[str] = Field(default=[], description="Ray: what to run there first")


class VllmNodesPlan(_Frozen):
    """Every node's command, and the order the nodes start and stop in."""

    executor: VllmExecutor
    tensor_parallel: int
    pipeline_parallel: int
    gpu_name: str
    master_addr: str
    master_port: int
    nodes: list[NodeCommand]
    start_order: list[int]
    stop_order: list[int]
    notes: list[str]
    lines: list[str] = Field(description="every node's command as a person would type it")


class VllmAcrossRequest(_Frozen):
    """`POST /api/v1/engines/vllm/across`: this machine (the head) and paired machines."""

    options: InstanceOptions
    peers: list[str] = Field(
        min_length=1, max_length=63, description="paired machines by id or name, in rank order"
    )
    executor: VllmExecutor = Field(
        default=VllmExecutor.MP,
        description="mp: Roundhouse starts vLLM on every machine; ray: the user's Ray cluster "
        "runs the workers and vLLM starts on this machine only",
    )
    master_port: int = Field(default=29501, description="torch.distributed's rendezvous")
    ray_port: int = Field(default=6379, description="the Ray head's port (its GCS), with ray")
    port: int | None = Field(
        default=None, ge=1, le=65535, description="the head's API port; none: a free one"
    )
    plan_only: bool = Field(default=False, description="answer the plan; start nothing")


class VllmAcrossAnswer(_Frozen):
    """The plan, and the instance started (none with plan_only)."""

    plan: VllmNodesPlan
    instance: InstanceInfo | None = None


class PeerNodeFacts(_Frozen):
    """`GET /peer/v1/nodes/vllm?model=`: what a paired machine offers a vLLM node."""

    name: str
    hardware: HardwareInventory
    vllm: DetectedEngine | None = Field(description="the vLLM this machine detects; none: none")
    has_model: bool


class PeerNodeStart(_Frozen):
    """`POST /peer/v1/nodes/vllm`: run one follower node of a group the caller heads.

    The peer builds the node's command again from its own vLLM and these fields, and runs
    it only if `argv` is exactly that (ADR 39): never a command taken from the network."""

    group: str = Field(pattern=r"^[0-9a-f]{12}$")
    rank: int = Field(ge=1, le=63)
    nnodes: int = Field(ge=2, le=64)
    master_addr: str = Field(min_length=1, max_length=253)
    master_port: int = Field(ge=1024, le=65535)
    address: str = Field(min_length=1, max_length=253, description="this node's, as planned")
    interface: str | None = Field(default=None, max_length=64)
    port: int = Field(ge=1, le=65535, description="the head's API port, as planned")
    options: InstanceOptions
    argv: list[str] = Field(max_length=400)


class PeerNode(_Frozen):
    """One node a paired machine runs here: whether it runs, and how it ended."""

    id: str
    group: str
    rank: int
    pid: int
    running: bool
    exit: ExitInfo | None = None
