"""The routes a paired machine calls to run a node of its vLLM group here (/peer/v1/nodes):
this machine's facts for the plan, start a node it builds itself, watch it, stop it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from roundhouse.api.engine_nodes import PeerNode, PeerNodeFacts, PeerNodeStart
from roundhouse.core.peers.client import PEER_PREFIX
from roundhouse.server.deps import Services
from roundhouse.server.routes.peer_api import caller
from roundhouse.server.vllm_across import node_answer, node_facts, start_node

router = APIRouter(prefix=f"{PEER_PREFIX}/nodes", tags=["peer"])
# The longest a watch waits for a node to end before answering that it runs.
MAX_WAIT_S = 20.0


@router.get("/vllm", response_model=PeerNodeFacts)
async def facts(
    request: Request,
    services: Services,
    model: Annotated[str, Query(min_length=1, max_length=300)],
) -> PeerNodeFacts:
    """This machine's GPUs, its vLLM and whether it holds `model`: the head plans with them."""
    caller(request)
    return await node_facts(services, model)


@router.post("/vllm", response_model=PeerNode)
async def start(request: Request, asked: PeerNodeStart, services: Services) -> PeerNode:
    """Run node `asked.rank` of the caller's group, built here; answers once it runs."""
    owner = caller(request)
    came_from = request.client.host if request.client else ""
    server = request.scope.get("server")
    reached_at = str(server[0]) if server else ""
    node = await start_node(services, owner, came_from, reached_at, asked)
    return node_answer(node)


@router.get("/{node_id}", response_model=PeerNode)
async def watch(
    request: Request,
    node_id: str,
    services: Services,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S)] = 0,
) -> PeerNode:
    """The node, once it ended or after `wait` seconds while it runs (the caller's only)."""
    node = await services.instances.hosted_nodes.wait(caller(request), node_id, wait)
    return node_answer(node)


@router.delete("/{node_id}", response_model=PeerNode)
async def stop(request: Request, node_id: str, services: Services) -> PeerNode:
    """Stop the node (the group stopped) and forget it; answers how it ended."""
    node, _ = await services.instances.hosted_nodes.stop(caller(request), node_id)
    return node_answer(node)
