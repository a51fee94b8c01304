"""The routes a paired machine calls on the peer listener (/peer/v1): pairing, this machine's
state, start and stop, unpairing, and the change feed. Never mounted on the control API."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import ValidationError

from roundhouse.api.events import EventKind
from roundhouse.api.instances import InstanceInfo, InstanceOrigin
from roundhouse.api.peers import (
    MAX_PAIR_BODY,
    PairReply,
    PairRequest,
    PeerLoad,
    PeerStart,
    PeerState,
    PeerStopped,
)
from roundhouse.core.errors import InvalidInputError, NotFoundError, RoundhouseError
from roundhouse.core.gateway.errors import GatewayError
from roundhouse.core.peers.client import PEER_PREFIX
from roundhouse.server.deps import Services
from roundhouse.server.routes.events import KindsQuery, chosen_kinds, followed, resume_point

PAIR_PATH = f"{PEER_PREFIX}/pair"

router = APIRouter(prefix=PEER_PREFIX, tags=["peer"])
# What a paired machine may follow of this one's change feed: what it serves. Not the
# settings, the library, the jobs or the logs, which are the owner's.
PEER_KINDS = frozenset({EventKind.INSTANCES, EventKind.GATEWAY})


class _PeerProblem(RoundhouseError):
    def __init__(self, detail: str, status: int) -> None:
        super().__init__(detail)
        self.status = status
        self.title = "Refused" if status < 500 else "Not available"


def caller(request: Request) -> str:
    peer = getattr(request.state, "peer", None)
    if not isinstance(peer, str):
        # Only a paired machine's key reaches here (the listener's key guard).
        raise _PeerProblem("This route is for paired machines only.", 403)
    return peer


async def _bounded_body(request: Request, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _PeerProblem(f"A pairing request is at most {limit} bytes.", 413)
        chunks.append(chunk)
    return b"".join(chunks)


@router.post("/pair", response_model=PairReply)
async def pair(request: Request, services: Services) -> PairReply:
    """Pair with the machine asking: the code shown here is the credential (see ADR 33)."""
    peers = services.peers
    peers.admit_attempt()
    body = await _bounded_body(request, MAX_PAIR_BODY)
    try:
        asked = PairRequest.model_validate(json.loads(body))
    except (ValueError, ValidationError) as exc:
        raise InvalidInputError("The pairing request is not one this version reads.") from exc
    host = request.client.host if request.client else ""
    return await peers.accept(asked, host)


@router.delete("/pair", status_code=204)
async def unpair(request: Request, services: Services) -> Response:
    """The calling machine unpaired this one: forget it too."""
    await services.peers.forgotten_by(caller(request))
    return Response(status_code=204)


def is_own(info: InstanceInfo) -> bool:
    # This machine's instances only: a peer never acts through us on a third machine.
    return info.origin != InstanceOrigin.PEER


@router.get("/state", response_model=PeerState)
async def state(request: Request, services: Services) -> PeerState:
    """This machine: its hardware, instances, load, and the models it can start by name."""
    caller(request)
    gateway = services.gateway
    instances = [i for i in services.instances.all() if is_own(i)]
    own = {i.id for i in instances}
    load = [
        PeerLoad(instance=u.instance, in_flight=u.in_flight, queued=u.queued)
        for u in gateway.usage_report()
        if u.instance in own
    ]
    listed = [e for e in gateway.listed() if e.instance is None or is_own(e.instance)]
    startable = sorted({entry.model.id for entry in listed if entry.instance is None})
    return PeerState(
        name=services.peers.name,
        version=services.version,
        fingerprint=services.peers.identity.fingerprint,
        hardware=await services.inventory(),
        instances=instances,
        load=load,
        startable=startable,
        listed=[entry.model for entry in listed],
    )


@router.post("/instances", response_model=InstanceInfo)
async def start(request: Request, asked: PeerStart, services: Services) -> InstanceInfo:
    """Start (or find running) the model as this machine's gateway would; answers when ready."""
    caller(request)
    try:
        served = await services.gateway.serve(asked.model)
    except GatewayError as exc:
        raise _PeerProblem(exc.message, exc.status) from exc
    if not is_own(served):
        raise _PeerProblem(
            f"'{asked.model}' is served by another paired machine, not this one.", 404
        )
    return served


@router.delete("/instances/{instance_id}", response_model=PeerStopped)
async def stop(request: Request, instance_id: str, services: Services) -> PeerStopped:
    """Stop an instance this machine runs (never one Roundhouse did not start)."""
    caller(request)
    found = next((i for i in services.instances.all() if i.id == instance_id and is_own(i)), None)
    if found is None:
        raise NotFoundError(f"This machine runs no instance {instance_id!r}.")
    stopped = await services.instances.stop(instance_id, force=False)
    return PeerStopped(instance=stopped.id, stopped=True)


def peer_kinds(request: Request, kinds: str | None = KindsQuery) -> frozenset[str]:
    """The caller checked and the kinds it asked for, before the stream starts."""
    caller(request)
    return chosen_kinds(kinds, PEER_KINDS)


@router.get("/events", response_class=EventSourceResponse)
async def events(
    services: Services,
    chosen: Annotated[frozenset[str], Depends(peer_kinds)],
    since: Annotated[int | None, Query(ge=0)] = None,
    last_event_id: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> AsyncIterator[ServerSentEvent]:
    """This machine's change feed as a paired machine may follow it: what it serves (the
    instances, the gateway's models), as the control API's feed sends them."""
    async for message in followed(services, resume_point(last_event_id, since), chosen):
        yield message
