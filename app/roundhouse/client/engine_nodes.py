"""The daemon client's calls for engines across machines (mixed into DaemonClient)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import httpx
from pydantic import BaseModel

from roundhouse.api.engine_nodes import (
    VllmAcrossAnswer,
    VllmAcrossRequest,
    VllmNodesPlan,
    VllmNodesRequest,
)

M = TypeVar("M", bound=BaseModel)
_JSON = {"Content-Type": "application/json"}
# The daemon asks every paired machine before it answers, and with Ray runs `ray status`,
# which waits out Ray's own connect timeout when no cluster answers.
ACROSS_TIMEOUT = httpx.Timeout(10.0, connect=2.0, read=90.0)


class EngineNodesMixin:
    """`/api/v1/engines/vllm/nodes`: plan one model across machines."""

    if TYPE_CHECKING:
        # Provided by DaemonClient.
        async def _request(self, method: str, path: str, model: type[M], **kwargs: Any) -> M: ...

    async def plan_vllm_nodes(self, request: VllmNodesRequest) -> VllmNodesPlan:
        """Every node's command, in start order; nothing is started."""
        body = request.model_dump_json()
        return await self._request(
            "POST", "/engines/vllm/nodes/plan", VllmNodesPlan, content=body, headers=_JSON
        )

    async def start_vllm_across(self, request: VllmAcrossRequest) -> VllmAcrossAnswer:
        """Start one model here and on paired machines (listed at once, ready later); with
        plan_only, the plan alone."""
        body = request.model_dump_json()
        return await self._request(
            "POST",
            "/engines/vllm/across",
            VllmAcrossAnswer,
            content=body,
            headers=_JSON,
            timeout=ACROSS_TIMEOUT,
        )
