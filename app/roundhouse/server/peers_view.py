"""The paired machines as the Machines page shows them: each one as last seen by the watch."""

from __future__ import annotations

from roundhouse.api.peers import PeerInfo, PeerSeen, PeersView
from roundhouse.core.peers.watch import PeerWatch
from roundhouse.server.peer_service import PeerService


async def peers_view(peers: PeerService, watch: PeerWatch) -> PeersView:
    """Every paired machine, reachable as its change feed last said (nothing is asked now),
    with what it last told about itself."""
    listed = (await peers.list(check=False)).peers
    infos: list[PeerInfo] = []
    seen: list[PeerSeen] = []
    for info in listed:
        last = watch.seen(info.id)
        if last.state is not None:
            info = info.model_copy(
                update={"reachable": True, "error": None, "version": last.state.version}
            )
        elif last.error is not None:
            info = info.model_copy(update={"reachable": False, "error": last.error})
        infos.append(info)
        seen.append(PeerSeen(id=info.id, state=last.state, error=last.error))
    return PeersView(peers=infos, listener=peers.listener_status(), seen=seen)
