"""Failover: a healthy instance or a fallback model for a request, and when to try again."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace

from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.core.gateway.choice import Load, choose, unusable
from roundhouse.core.gateway.errors import ContextTooLong, GatewayError, UpstreamFailed
from roundhouse.core.gateway.router import Route, serving

# Engine replies that say the instance cannot take the request now, before any body: the
# request goes to another instance when there is one.
RETRY_STATUSES = frozenset({502, 503})


class NoHealthyInstance(GatewayError):
    """Instances serve the model, but none takes requests now, and no fallback does."""

    status = 503
    kind = "server_error"
    code = "no_healthy_instance"


class FailedBeforeReply(UpstreamFailed):
    """The instance failed the request before one byte of a reply reached the client (no
    connection, a reset, a 502 or 503): sending it to another instance is safe."""

    code = "upstream_unreachable"

    def __init__(self, message: str, instance_id: str) -> None:
        super().__init__(message)
        self.instance_id = instance_id


def pick(
    instances: list[InstanceInfo],
    model: str,
    load: Load,
    *,
    avoid: Collection[str],
    fallbacks: list[str],
    aliased: Callable[[str], str],
    is_preset: Callable[[str], bool],
    startable: bool,
) -> Route | None:
    """The route for `model`: its healthiest least busy ready instance not in `avoid`, else
    the first fallback model one serves (x-roundhouse-model-via: fallback). None when
    neither: the caller waits for one coming, or starts the model. A fallback stands in
    for a model some instance serves (one failed, is open, or is coming back), or one
    nothing can start; not for a model a start would serve. Raises NoHealthyInstance when
    ready instances serve `model` and none may take the request."""
    chosen = choose(instances, model, load, avoid=avoid, is_preset=is_preset)
    if chosen is not None:
        return replace(chosen, model=model)
    served = serving(instances, model, is_preset)
    if served or not startable:
        for other in fallbacks:
            found = choose(instances, aliased(other), load, avoid=avoid, is_preset=is_preset)
            if found is not None:
                return replace(found, model=other, via="fallback")
    ready = [i for i in served if i.status == InstanceStatus.READY]
    if ready:
        raise NoHealthyInstance(_none_healthy(model, ready, unusable(instances, model, load)))
    return None


def _none_healthy(model: str, ready: list[InstanceInfo], open_: list[InstanceInfo]) -> str:
    names = ", ".join(i.id for i in ready)
    why = (
        "their circuits are open after failures in a row; a health check closes them once "
        "they answer"
        if open_
        else "each failed this request already"
    )
    return (
        f"The model '{model}' is served by {names}, but none takes requests now: {why}. "
        "Retry in a moment; `roundhouse gateway routes` shows each instance's health. A "
        f"fallback model (setting gateway.fallbacks) would serve '{model}' meanwhile."
    )


def is_retryable(exc: BaseException) -> bool:
    """Whether a request that failed with `exc` may go to another instance: it failed before
    any reply (FailedBeforeReply), or it does not fit this instance's context."""
    return isinstance(exc, FailedBeforeReply | ContextTooLong)
