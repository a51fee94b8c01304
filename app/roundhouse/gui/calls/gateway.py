"""The gateway's key and listeners, asked of the daemon."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundhouse.gui.call import Call

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge


class GatewayKeyCalls:
    """The gateway's key and listeners, asked of the daemon."""

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
