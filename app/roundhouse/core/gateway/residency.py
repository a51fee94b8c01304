"""Which instances hold memory for Roundhouse, which one to unload first, which are expired."""

from __future__ import annotations

from collections.abc import Iterable

from roundhouse.api.instances import InstanceInfo, InstanceOrigin, InstanceStatus
from roundhouse.core.gateway.scheduler import Scheduler

# Started by this daemon or by an earlier one: ours to run and to stop. External engines
# belong to someone else: they never count and are never stopped.
_OURS = frozenset({InstanceOrigin.STARTED, InstanceOrigin.ADOPTED})
# Going away or gone: no longer resident.
_LEAVING = frozenset({InstanceStatus.FAILED, InstanceStatus.STOPPING})
# Only a serving instance is unloaded: one still loading is about to be used.
_UNLOADABLE = frozenset({InstanceStatus.READY, InstanceStatus.UNHEALTHY})


def resident(instances: Iterable[InstanceInfo]) -> list[InstanceInfo]:
    """The instances counted against `max_resident`."""
    return [i for i in instances if i.origin in _OURS and i.status not in _LEAVING]


def idle_since(info: InstanceInfo, scheduler: Scheduler) -> float:
    """When it last answered (or was last asked for), else when it became ready."""
    used = scheduler.last_used(info.id)
    ready = info.ready_at or info.started_at
    return max(used, ready) if used is not None else ready


def _idle(info: InstanceInfo, scheduler: Scheduler, busy: frozenset[str]) -> bool:
    return info.status in _UNLOADABLE and info.id not in busy and scheduler.idle(info.id)


def least_recently_used_idle(
    instances: Iterable[InstanceInfo], scheduler: Scheduler, busy: frozenset[str] = frozenset()
) -> InstanceInfo | None:
    """The resident instance to unload for room: idle (nothing in flight or waiting for
    it, not in `busy`) and unused the longest. None when every resident one is busy or
    loading."""
    idle = [i for i in resident(instances) if _idle(i, scheduler, busy)]
    return min(idle, key=lambda i: idle_since(i, scheduler), default=None)


def expired(
    instances: Iterable[InstanceInfo],
    started_by_gateway: set[str],
    scheduler: Scheduler,
    ttl_s: float,
    busy: frozenset[str] = frozenset(),
) -> list[InstanceInfo]:
    """Instances the gateway started that have been idle for `ttl_s` (0: none ever)."""
    if ttl_s <= 0:
        return []
    now = scheduler.clock()
    return [
        i
        for i in resident(instances)
        if i.id in started_by_gateway
        and _idle(i, scheduler, busy)
        and now - idle_since(i, scheduler) >= ttl_s
    ]
