"""The gateway, asked of the daemon: its key and listeners, and the models it serves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from roundhouse.api.gateway import GatewayModelList
from roundhouse.gui.call import Call

if TYPE_CHECKING:
    from roundhouse.client import DaemonClient
    from roundhouse.gui.daemon_bridge import DaemonBridge


@dataclass(frozen=True)
class GatewayFacts:
    """What apps are told to use: the daemon's address, the models, the key."""

    root: str
    models: GatewayModelList
    key: str | None


class GatewayCalls:
    """The gateway's key and listeners, and what it serves."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    def status(self) -> Call:
        """Answers with the GatewayStatus."""
        return self._bridge.call("read the gateway's state", lambda c: c.gateway_status())

    def generate(self) -> Call:
        """Answers with the GatewayKey: the one time it is shown."""
        return self._bridge.call("generate a gateway key", lambda c: c.generate_gateway_key())

    def clear(self) -> Call:
        """Answers with the GatewayStatus after the key is gone."""
        return self._bridge.call("clear the gateway key", lambda c: c.clear_gateway_key())

    def models(self) -> Call:
        """Answers with the GatewayModelList: served, loading, startable, the active one."""
        return self._bridge.call("list the models the gateway serves", lambda c: c.gateway_models())

    def facts(self) -> Call:
        """Answers with the GatewayFacts a client is set up with."""

        async def read(client: DaemonClient) -> GatewayFacts:
            models = await client.gateway_models()
            return GatewayFacts(root=client.base_url, models=models, key=await client.gateway_key())

        return self._bridge.call("read the gateway's models and key", read)
