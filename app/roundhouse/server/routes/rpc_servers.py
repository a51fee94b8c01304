"""Routes of llama.cpp RPC workers: run rpc-server on one address for another machine, stop it."""

from __future__ import annotations

from fastapi import APIRouter

from roundhouse.api.rpc import (
    RpcServerInfo,
    RpcServerList,
    RpcServerRequest,
    SplitProposal,
    SplitQuery,
)
from roundhouse.core.knowledge.fit.split import propose_split
from roundhouse.server.deps import Fitter, Instances, ModelsOpen

router = APIRouter(tags=["rpc-servers"])


@router.get("/rpc-servers", response_model=RpcServerList)
async def list_rpc_servers(instances: Instances) -> RpcServerList:
    """The rpc-servers this daemon runs: those of split instances and those started here."""
    return RpcServerList(rpc_servers=instances.rpc_servers())


@router.post("/rpc-servers", response_model=RpcServerInfo, status_code=201)
async def start_rpc_server(request: RpcServerRequest, instances: Instances) -> RpcServerInfo:
    """Run llama.cpp's rpc-server bound to `host` only (0.0.0.0 and :: are refused); it
    answers once the port accepts. rpc-server has no authentication: give the address the
    pairing agreed on, never one that other machines of the network reach."""
    return await instances.start_rpc_server(request)


@router.delete("/rpc-servers/{worker_id}", response_model=RpcServerInfo)
async def stop_rpc_server(worker_id: str, instances: Instances) -> RpcServerInfo:
    """Stop the rpc-server and what it started."""
    return await instances.stop_rpc_server(worker_id)


@router.post("/rpc-servers/split", response_model=SplitProposal, dependencies=[ModelsOpen])
async def propose(query: SplitQuery, fitter: Fitter) -> SplitProposal:
    """The split the fit estimate proposes over this machine and the workers (each with its
    free memory): layers and bytes per machine, llama-server's --tensor-split and -ngl, and
    in words when one machine would be faster."""
    fit = await fitter.fit(query.fit)
    return propose_split(fit.report, query.workers, link_mbps=query.link_mbps)
