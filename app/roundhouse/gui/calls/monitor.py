"""The Monitor page's calls to the daemon: the live metrics stream and their history."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundhouse.gui.call import Call, Follow

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge


class MonitorCalls:
    """Each names what it asks for in words, which failures repeat ("could not <what>")."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    def follow_metrics(self) -> Follow:
        """Receives a MetricsSnapshot now and after each daemon tick (once a second)."""
        return self._bridge.follow("follow the live metrics", lambda c: c.stream_metrics())

    def history(self, window_s: float) -> Call:
        """Answers with the MetricsHistory of every instance over the last `window_s`."""
        return self._bridge.call("read the metrics' history", lambda c: c.metrics_history(window_s))
