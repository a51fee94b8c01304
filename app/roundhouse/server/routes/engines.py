"""Routes of the engines: the catalog and what is installed on this machine."""

from __future__ import annotations

from fastapi import APIRouter

from roundhouse.api.engine_nodes import (
    VllmAcrossAnswer,
    VllmAcrossRequest,
    VllmNodesPlan,
    VllmNodesRequest,
)
from roundhouse.api.engines import EnginesOverview
from roundhouse.server.deps import Services
from roundhouse.server.vllm_across import start_across
from roundhouse.server.vllm_nodes import plan_answer

router = APIRouter(prefix="/engines", tags=["engines"])


@router.get("", response_model=EnginesOverview)
async def get_engines(services: Services, refresh: bool = False) -> EnginesOverview:
    return await services.engines(refresh=refresh)


@router.post("/vllm/nodes/plan", response_model=VllmNodesPlan)
async def plan_vllm_nodes(services: Services, request: VllmNodesRequest) -> VllmNodesPlan:
    """Every node's command for one model across machines, in start order; runs nothing."""
    return await plan_answer(services, request)


@router.post("/vllm/across", response_model=VllmAcrossAnswer)
async def vllm_across(services: Services, request: VllmAcrossRequest) -> VllmAcrossAnswer:
    """Start one model on this machine (the head) and paired machines as one instance, listed
    at once and ready once every node joined; with plan_only, the plan alone."""
    return await start_across(services, request)
