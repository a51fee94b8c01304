"""Control routes of the gateway's scheduling: what it can serve, usage, serve a model now."""

from __future__ import annotations

from fastapi import APIRouter

from roundhouse.api.gateway import GatewayModelList, GatewayRoutes, GatewayUsage, ServeRequest
from roundhouse.api.instances import InstanceInfo
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.gateway.errors import GatewayError
from roundhouse.core.gateway.gateway import EXTERNALS_MAX_AGE_ON_LIST_S
from roundhouse.server.deps import Services, TheGateway

router = APIRouter(prefix="/gateway", tags=["gateway"])


class _GatewayProblem(RoundhouseError):
    """A gateway error answered on the control API: a problem response, not OpenAI's shape."""

    def __init__(self, error: GatewayError) -> None:
        super().__init__(error.message)
        self.status = error.status
        self.title = {
            404: "Model not found",
            429: "Gateway busy",
            503: "Model not available",
        }.get(error.status, "Gateway error")


@router.get("/models", response_model=GatewayModelList)
async def gateway_models(gateway: TheGateway) -> GatewayModelList:
    """Models running instances serve, those loading, and those a preset can start."""
    await gateway.refresh_externals(EXTERNALS_MAX_AGE_ON_LIST_S)
    return gateway.model_list()


@router.get("/usage", response_model=GatewayUsage)
async def gateway_usage(gateway: TheGateway) -> GatewayUsage:
    """Per instance: requests and tokens through the gateway, in flight, queued, last use."""
    return GatewayUsage(usage=gateway.usage_report())


@router.get("/routes", response_model=GatewayRoutes)
async def gateway_routes(gateway: TheGateway) -> GatewayRoutes:
    """Per model: its instances in the order a request tries them (healthy and least busy
    first), each one's circuit, failures, load and context, and the model's fallbacks."""
    return gateway.routes()


@router.post("/serve", response_model=InstanceInfo)
async def serve_model(
    request: ServeRequest, services: Services, gateway: TheGateway
) -> InstanceInfo:
    """Make sure an instance serves the model: start it with its preset (even with
    just-in-time starts off) and answer once it is ready. It becomes the active model."""
    try:
        served = await gateway.serve(request.model)
    except GatewayError as exc:
        raise _GatewayProblem(exc) from exc
    # Asked for by the user (the first-run guide, `roundhouse run`): the active model now.
    services.remember_active_model(gateway.model_of(served.id) or gateway.listed_as(request.model))
    return served
