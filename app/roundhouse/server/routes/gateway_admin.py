"""Control routes of the gateway's security: its API key and the state of its listeners."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body

from roundhouse.api.gateway import GatewayKey, GatewayKeyShown, GatewayListener, GatewayStatus
from roundhouse.core.errors import ConflictError
from roundhouse.server.deps import Services
from roundhouse.server.routes.gateway import GATEWAY_PREFIX
from roundhouse.server.services import DaemonServices

router = APIRouter(prefix="/gateway", tags=["gateway"])


def gateway_status(services: DaemonServices) -> GatewayStatus:
    key = services.gateway_key
    key_set = key.is_set
    # A key that exists but could not be read: no key matches until it can be (fail closed).
    unreadable = f"Refusing every key: {key.error}" if key.current == "" else None
    # The daemon's own address: loopback, and the control token works as well as the key.
    own = services.url + GATEWAY_PREFIX
    listeners = [GatewayListener(url=own, needs_key=key_set, error=unreadable)]
    for listener in (services.second_listener, services.ollama_listener):
        other = listener.status() if listener else None
        if other is not None:
            if unreadable and other.error is None:
                other = other.model_copy(update={"error": unreadable})
            listeners.append(other)
    return GatewayStatus(
        listeners=listeners,
        key_set=key_set,
        key_kept_in=key.kept_in,
        usage=services.gateway.usage_report(),
    )


@router.get("/status", response_model=GatewayStatus)
async def get_status(services: Services) -> GatewayStatus:
    """Where the gateway listens (or why not), whether a key is set, and each instance's use."""
    return gateway_status(services)


@router.get("/key", response_model=GatewayKeyShown)
async def get_key(services: Services) -> GatewayKeyShown:
    """The key, for the local clients that point other programs at the gateway. Only the
    control token reaches this route, never a web page, and that token is accepted on /v1
    as well as the key, so showing the key to its holder gives nothing away."""
    return GatewayKeyShown(key=services.gateway_key.current or None)


@router.post("/key", response_model=GatewayKey)
async def set_key(
    services: Services, given: Annotated[GatewayKey | None, Body()] = None
) -> GatewayKey:
    """Store the given key, or generate one, in the keyring (or the secrets file where there
    is none); the answer is the only place the key is shown. A second listener that waited
    for a key starts."""
    key = await services.gateway_key.set(given.key if given is not None else None)
    await services.apply_listeners()
    return GatewayKey(key=key, kept_in=services.gateway_key.kept_in)


@router.delete("/key", response_model=GatewayStatus)
async def clear_key(services: Services) -> GatewayStatus:
    """Remove the key: /v1 is open again on loopback, and a listener beyond it stops. Refused
    while `*` is among the CORS origins: every web page could use the gateway then."""
    if "*" in (o.strip() for o in services.settings.gateway.cors_origins):
        raise ConflictError(
            "The key stays: gateway.cors_origins holds `*`, which lets every web page use "
            "the gateway and needs the key. Remove `*` first (`roundhouse settings set "
            "gateway.cors_origins ''`, or the Settings page), then clear the key."
        )
    await services.gateway_key.clear()
    await services.apply_listeners()
    return gateway_status(services)
