"""What a paired machine may read of this one's live metrics (/peer/v1/metrics/{instance}):
one of this machine's own instances' history, as the control API's metrics route gives it."""

from __future__ import annotations

from fastapi import APIRouter, Request

from roundhouse.api.metrics import MetricsHistory
from roundhouse.core.errors import NotFoundError
from roundhouse.core.peers.client import PEER_PREFIX
from roundhouse.server.deps import Metrics, Services
from roundhouse.server.routes.metrics import Window
from roundhouse.server.routes.peer_api import caller, is_own

router = APIRouter(prefix=PEER_PREFIX, tags=["peer"])


@router.get("/metrics/{instance_id}", response_model=MetricsHistory)
async def instance_metrics(
    request: Request,
    instance_id: str,
    services: Services,
    metrics: Metrics,
    window: Window = 300.0,
) -> MetricsHistory:
    """The figures of one instance this machine runs over the window (1 s points within the
    hour, 1 min beyond): never another machine's, nor the owner's other data."""
    caller(request)
    if not any(i.id == instance_id and is_own(i) for i in services.instances.all()):
        raise NotFoundError(f"This machine runs no instance {instance_id!r}.")
    return metrics.history(window, instance_id)
