"""Which of the instances serving a model a request goes to: healthy, least busy, preferred."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from roundhouse.api.gateway import CircuitState
from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.core.gateway.router import Route, route, serving


@dataclass(frozen=True)
class Load:
    """What the gateway knows of each instance when it chooses: its circuit, and its
    requests in flight plus those queued for it."""

    circuit: Callable[[str], CircuitState]
    busy: Callable[[str], int]


def _no_preset(_: str) -> bool:
    return False


def ranked(
    instances: list[InstanceInfo],
    model: str,
    load: Load,
    is_preset: Callable[[str], bool] = _no_preset,
) -> list[InstanceInfo]:
    """The instances serving `model` in the order a request tries them: ready ones whose
    circuit takes requests first, the least busy first, a half-open one before a closed one
    as busy (its trial settles it soon), then by origin (`router.by_preference`)."""
    serving_it = serving(instances, model, is_preset)

    def key(pair: tuple[int, InstanceInfo]) -> tuple[bool, int, bool, int]:
        index, info = pair
        circuit = load.circuit(info.id)
        usable = info.status == InstanceStatus.READY and circuit != CircuitState.OPEN
        return (not usable, load.busy(info.id), circuit != CircuitState.HALF_OPEN, index)

    return [info for _, info in sorted(enumerate(serving_it), key=key)]


def choose(
    instances: list[InstanceInfo],
    model: str,
    load: Load,
    *,
    avoid: Collection[str] = (),
    is_preset: Callable[[str], bool] = _no_preset,
) -> Route | None:
    """The route to the ready instance a request for `model` goes to now, not one of
    `avoid` (those it failed on already) nor one whose circuit is open; None when there is
    none."""
    for info in ranked(instances, model, load, is_preset):
        if info.id in avoid:
            continue
        if info.status != InstanceStatus.READY or load.circuit(info.id) == CircuitState.OPEN:
            return None  # ranked puts every usable one first
        return route([info], model, is_preset)
    return None


def unusable(
    instances: list[InstanceInfo],
    model: str,
    load: Load,
    is_preset: Callable[[str], bool] = _no_preset,
) -> list[InstanceInfo]:
    """The ready instances serving `model` that take no requests now (circuit open)."""
    return [
        info
        for info in serving(instances, model, is_preset)
        if info.status == InstanceStatus.READY and load.circuit(info.id) == CircuitState.OPEN
    ]
