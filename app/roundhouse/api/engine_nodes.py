"""vLLM across machines: the nodes a user gives and every node's command that Roundhouse plans."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from roundhouse.api.engines import InstanceOptions
from roundhouse.api.hardware import HardwareInventory


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
