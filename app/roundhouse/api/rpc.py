"""Schemas of llama.cpp's RPC split: an rpc-server to run, one running, and a proposed split."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from roundhouse.api.fit import FitQuery


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RpcServerRequest(_Frozen):
    """Run rpc-server on this machine, bound to `host` only (never 0.0.0.0 or ::)."""

    host: str = Field(description="the one IPv4 address to bind: the pairing's, or 127.0.0.1")
    port: int = Field(default=50052, ge=1, le=65535)
    threads: int | None = Field(default=None, ge=1, description="CPU threads; None: half")
    cache: bool = Field(
        default=False,
        description="keep large tensors in a local cache (-c), so weights cross the network once",
    )
    devices: list[str] = Field(default=[], description="the devices to offer (CUDA0,...)")
    owner: str = Field(
        default="api",
        max_length=200,
        description="who asked (a peer's name, an instance id): stop_owned stops them together",
    )


class RpcServerInfo(_Frozen):
    """A running rpc-server."""

    id: str
    host: str
    port: int
    address: str = Field(description="HOST:PORT, as llama-server's --rpc takes it")
    owner: str
    pid: int
    started_at: float
    free_bytes: int | None = Field(default=None, description="what its devices had free at start")
    total_bytes: int | None = None


class RpcServerList(_Frozen):
    """`GET /api/v1/rpc-servers`: the rpc-servers this daemon runs."""

    rpc_servers: list[RpcServerInfo]


class MachineMemory(_Frozen):
    """One RPC worker's free memory for the split: its --rpc address and what it has free."""

    address: str
    free_bytes: int = Field(ge=0)


class SplitShare(_Frozen):
    """What one machine would hold in the proposed split."""

    machine: str = Field(description='"this machine" or the worker\'s HOST:PORT')
    layers: int
    bytes: int = Field(description="weights and KV cache of its layers, plus its work buffers")
    free_bytes: int
    fits: bool


class SplitProposal(_Frozen):
    """The split the fit estimate proposes, as llama-server takes it and per machine in words."""

    shares: list[SplitShare]
    tensor_split: list[float] = Field(
        description="--tensor-split: the workers' layers in --rpc order, then this machine's "
        "GPUs'; empty when there is no choice to make"
    )
    n_gpu_layers: int = Field(description="-ngl: the layers not kept on this machine's CPU")
    fits: bool
    summary: str
    slower: str = Field(
        default="", description="why it would be slower than one machine, in words; empty: not"
    )


class SplitQuery(_Frozen):
    """Propose a split of the model `fit` names over this machine and `workers`."""

    fit: FitQuery
    workers: list[MachineMemory] = Field(min_length=1, description="in --rpc order")
    link_mbps: float | None = Field(
        default=None, gt=0, description="the link's speed, when known: a slow one is named"
    )


class PeerRpcLease(_Frozen):
    """`POST /peer/v1/rpc-servers`: an rpc-server lent to the calling paired machine, reached
    only through the mutual-TLS relay on `port` of the address the pairing agreed on."""

    id: str
    port: int = Field(description="the relay's port: mutual TLS with the caller's certificate")
    free_bytes: int | None = Field(default=None, description="what its devices had free at start")
    total_bytes: int | None = None


class PeerRpcLeaseList(_Frozen):
    """`GET /peer/v1/rpc-servers`: the rpc-servers lent to the calling machine."""

    leases: list[PeerRpcLease]
