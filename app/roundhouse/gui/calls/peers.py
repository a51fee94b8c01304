"""The paired machines' calls to the daemon (pairing, the list, a peer's state, start, stop):
each a Call. Widgets reach the daemon through these, never through the client."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundhouse.gui.call import Call

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge


class PeersCalls:
    """Pair with other machines' daemons, and see, start and stop what runs on them."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    def list(self, *, check: bool = True) -> Call:
        """Answers with the PeerList (whether each answers, unless not `check`)."""
        return self._bridge.call("list the paired machines", lambda c: c.peers(check=check))

    def open_code(self) -> Call:
        """Answers with the PairingCodeReply: the code, this machine's addresses, fingerprint."""
        return self._bridge.call("open a pairing code", lambda c: c.open_pairing_code())

    def pair(self, host: str, port: int, code: str) -> Call:
        """Answers with the PeerInfo of the machine paired with."""
        return self._bridge.call("pair with the machine", lambda c: c.pair(host, port, code))

    def move(self, peer: str, host: str, port: int) -> Call:
        """Answers with the PeerInfo at its new address."""
        return self._bridge.call(
            "find the machine at its new address", lambda c: c.move_peer(peer, host, port)
        )

    def unpair(self, peer: str) -> Call:
        """Answers with the Unpaired: whether the other machine was told."""
        return self._bridge.call("unpair the machine", lambda c: c.unpair(peer))

    def discover(self) -> Call:
        """Answers with the DiscoveredList of daemons that answer on the LAN."""
        return self._bridge.call("look for machines on the LAN", lambda c: c.discover_peers())

    def state(self, peer: str) -> Call:
        """Answers with the PeerState: its hardware, instances, load, startable models."""
        return self._bridge.call("ask the machine its state", lambda c: c.peer_state(peer))

    def start(self, peer: str, model: str) -> Call:
        """Answers with the InstanceInfo once the model is ready there."""
        return self._bridge.call(
            f"start {model} on the machine", lambda c: c.peer_start(peer, model)
        )

    def stop(self, peer: str, instance: str) -> Call:
        """Answers with the PeerStopped."""
        return self._bridge.call(
            "stop the instance on the machine", lambda c: c.peer_stop(peer, instance)
        )

    def machines(self) -> Call:
        """Answers with the PeersView: each paired machine as its change feed last told."""
        return self._bridge.call("list the paired machines", lambda c: c.machines())

    def metrics(self, peer: str, instance: str, window_s: float) -> Call:
        """Answers with the MetricsHistory of one of the machine's instances."""
        return self._bridge.call(
            "read the figures of the machine's instance",
            lambda c: c.peer_metrics(peer, instance, window_s),
        )
