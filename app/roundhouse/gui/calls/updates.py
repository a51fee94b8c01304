"""The daemon's check for a newer release: what it knows, or a check made now."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundhouse.gui.call import Call

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge


class UpdateCalls:
    """The update check the daemon keeps, read or asked again."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    def status(self) -> Call:
        """Answers with the UpdateStatus the daemon has; nothing is asked of the network."""
        return self._bridge.call("read the update check", lambda c: c.update_status())

    def check(self) -> Call:
        """Answers with the UpdateStatus after asking PyPI now."""
        return self._bridge.call("check for updates", lambda c: c.check_updates())
