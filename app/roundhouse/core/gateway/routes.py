"""Where each model's requests go: its instances in the order tried, their health and load."""

from __future__ import annotations

from collections.abc import Callable

from roundhouse.api.engines import EngineId
from roundhouse.api.gateway import GatewayRoutes, ModelRoute, RouteInstance
from roundhouse.api.instances import InstanceInfo
from roundhouse.core.gateway.choice import Load, ranked
from roundhouse.core.gateway.health import Health
from roundhouse.core.gateway.router import short_name


def served_ids(info: InstanceInfo) -> list[str]:
    """The ids the gateway lists the instance's models under (as `router.listed` does)."""
    names = info.models or ([info.model] if info.model else [])
    return [n if info.engine == EngineId.OLLAMA else short_name(n) for n in names]


def routes_report(
    instances: list[InstanceInfo],
    load: Load,
    health: Health,
    fallbacks: dict[str, list[str]],
    context: Callable[[InstanceInfo], int | None],
    is_preset: Callable[[str], bool],
) -> GatewayRoutes:
    """Per model any instance serves (or with fallbacks set): its instances, best first."""
    # A failed instance too: its circuit says why requests no longer go there.
    present = instances
    models = dict.fromkeys(m for info in present for m in served_ids(info))
    models.update(dict.fromkeys(fallbacks))
    out = []
    for model in models:
        entries = []
        for info in ranked(present, model, load, is_preset):
            breaker = health.breaker(info.id)
            entries.append(
                RouteInstance(
                    instance=info.id,
                    engine=info.engine,
                    machine=info.machine,
                    status=info.status.value,
                    circuit=breaker.state,
                    failures=breaker.failures,
                    last_error=breaker.last_error,
                    next_check_in_s=health.next_check_in(info.id),
                    busy=load.busy(info.id),
                    context=context(info),
                )
            )
        out.append(ModelRoute(model=model, instances=entries, fallbacks=fallbacks.get(model, [])))
    return GatewayRoutes(routes=out)
