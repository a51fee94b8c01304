"""The head's side of llama.cpp RPC across paired machines: which paired machine a name means,
and the split the fit estimate proposes over the workers they lend (ADR 40)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

from roundhouse.api.engines import InstanceOptions, LaunchParams
from roundhouse.api.fit import FitQuery
from roundhouse.api.rpc import MachineMemory, SplitProposal
from roundhouse.core.errors import InvalidInputError, RoundhouseError
from roundhouse.core.instances.remote_rpc import PeerLink, RemoteRpcWorkers
from roundhouse.core.knowledge.fit.split import propose_split
from roundhouse.server.models_wiring import ModelsOpening
from roundhouse.server.peer_service import PeerService

log = logging.getLogger(__name__)


def remote_rpc_workers(peers: PeerService, models: ModelsOpening) -> RemoteRpcWorkers:
    """The lender of remote rpc-servers for this daemon's instances."""

    def link_for(name: str) -> PeerLink:
        wanted = name.strip()
        paired = peers.store.list()
        found = next((p for p in paired if p.id == wanted), None) or next(
            (p for p in paired if p.name.casefold() == wanted.casefold()), None
        )
        if found is None:
            known = ", ".join(sorted(p.name for p in paired)) or "none yet"
            raise InvalidInputError(
                f"{wanted!r} is not a paired machine (paired: {known}). Pair it first "
                "(`roundhouse peers add`), or name one by its name or id."
            )
        return PeerLink(
            id=found.id,
            name=found.name,
            host=found.host,
            cert_pem=found.cert_pem,
            open_client=lambda: peers.client(found.id),
        )

    async def split_for(
        params: LaunchParams, workers: Sequence[MachineMemory]
    ) -> SplitProposal | None:
        opened = models.now()
        model = params.model or ""
        if opened is None or not await asyncio.to_thread(Path(model).is_file):
            return None
        options = InstanceOptions.model_validate(
            params.model_dump(include=set(InstanceOptions.model_fields))
        )
        try:
            fit = await opened.fitter.fit(FitQuery(path=model, instance=options))
        except (RoundhouseError, ValueError) as exc:
            # No estimate: llama.cpp splits by each device's free memory itself.
            log.info("No split proposed for %s: %s", model, exc)
            return None
        return propose_split(fit.report, workers)

    return RemoteRpcWorkers(link_for, lambda: peers.identity, split_for)
