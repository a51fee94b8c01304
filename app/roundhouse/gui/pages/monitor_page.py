"""The Monitor page: live charts of every instance, its flags (bandwidth, CPU fallback, circuit)."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QHideEvent, QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.gateway import GatewayModelList
from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.metrics import MetricsHistory, MetricsSnapshot
from roundhouse.api.settings import UiSettings
from roundhouse.gui.call import NOT_CONNECTED, Call, Failure, Follow
from roundhouse.gui.calls.monitor import MonitorCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import Backoff, ConnectionState, DaemonBridge
from roundhouse.gui.widgets.monitor_buffer import MetricsBuffer
from roundhouse.gui.widgets.monitor_charts import MonitorCharts
from roundhouse.gui.widgets.monitor_flags import MonitorFlags
from roundhouse.gui.widgets.sample_buffer import SampleBuffer

WINDOWS: tuple[tuple[str, float], ...] = (
    ("Last minute", 60.0),
    ("Last 5 minutes", 300.0),
    ("Last 15 minutes", 900.0),
    ("Last hour", 3600.0),
)
DEFAULT_WINDOW = 1


class MonitorPage(QWidget):
    """Follows the metrics stream while shown; repaints on a timer (2-4 Hz), not per tick."""

    title = "Monitor"

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self._calls = MonitorCalls(bridge)
        self.buffer = MetricsBuffer(WINDOWS[DEFAULT_WINDOW][1])
        # Each GPU's utilization comes with the hardware samples the bridge always follows.
        self.samples = SampleBuffer(max(w for _, w in WINDOWS))
        self._follow: Follow | None = None
        self.history_call: Call | None = None
        self.history_loads = 0
        self._backoff = Backoff(first_s=1.0, max_s=30.0)
        self._painted = (-1, -1)

        heading = QLabel(self.title)
        heading.setObjectName("pageTitle")
        self.status_label = QLabel("Waiting for the daemon…")
        self.status_label.setWordWrap(True)
        self.window_box = QComboBox()
        for name, seconds in WINDOWS:
            self.window_box.addItem(name, seconds)
        self.window_box.setCurrentIndex(DEFAULT_WINDOW)
        self.window_box.setToolTip("How far back the charts reach")
        self.window_box.currentIndexChanged.connect(self._on_window_box_changed)
        self.pause_button = QPushButton("Pause")
        self.pause_button.setCheckable(True)
        self.pause_button.setToolTip("Hold the charts still; the figures keep arriving")
        self.pause_button.toggled.connect(self._on_pause_button_toggled)
        header = QHBoxLayout()
        header.addWidget(heading)
        header.addSpacing(16)
        header.addWidget(self.status_label, 1)
        header.addWidget(self.window_box)
        header.addWidget(self.pause_button)

        self.flags = MonitorFlags()
        self.charts = MonitorCharts()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(self.charts)
        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.flags)
        layout.addWidget(scroll, 1)

        self.repaint_timer = QTimer(self)
        self.repaint_timer.timeout.connect(self._on_repaint_timer_timeout)
        self._apply_ui_settings(bridge.ui_settings)
        self.repaint_timer.start()
        self._retry = QTimer(self)
        self._retry.setSingleShot(True)
        self._retry.timeout.connect(self._follow_metrics)

        bridge.when_connected(self._on_bridge_connected)
        bridge.disconnected.connect(self._on_bridge_disconnected)
        bridge.ui_settings_changed.connect(self._apply_ui_settings)
        bridge.inventory_changed.connect(self._on_bridge_inventory_changed)
        bridge.gateway_changed.connect(self._on_bridge_gateway_changed)
        bridge.history_loaded.connect(self.samples.extend)
        bridge.sample_received.connect(self.samples.append)
        if bridge.inventory is not None:
            self._on_bridge_inventory_changed(bridge.inventory)
        if bridge.gateway_models is not None:
            self._on_bridge_gateway_changed(bridge.gateway_models)

    @property
    def paused(self) -> bool:
        return self.pause_button.isChecked()

    @property
    def following(self) -> bool:
        return self._follow is not None and not self._follow.done

    @property
    def window_s(self) -> float:
        return float(self.window_box.currentData())

    # -- following, while the page is shown -----------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._bridge.state == ConnectionState.CONNECTED:
            self._load_history()
            self._follow_metrics()

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        # Nobody looks: the daemon keeps the history, fetched again when the page shows.
        self._retry.stop()
        if self._follow is not None:
            self._follow.cancel()

    def _follow_metrics(self) -> None:
        if self.following or not self.isVisible():
            return
        if self._bridge.state != ConnectionState.CONNECTED:
            return
        self._follow = follow = self._calls.follow_metrics()
        follow.received.connect(self._on_follow_received)
        follow.ended.connect(lambda: self._follow_again(follow, None))
        follow.failed.connect(lambda failure: self._follow_again(follow, failure))

    def _on_follow_received(self, snapshot: MetricsSnapshot) -> None:
        self._backoff.reset()
        self.buffer.add_snapshot(snapshot)

    def _follow_again(self, follow: Follow, failure: Failure | None) -> None:
        """The stream ended while the page shows: follow again after a growing wait."""
        connected = self._bridge.state == ConnectionState.CONNECTED
        if follow is not self._follow or not connected or failure == NOT_CONNECTED:
            return  # not connected: `connected` follows again
        why = str(failure) if failure else "the daemon ended the stream"
        self.status_label.setText(f"The charts are not live ({why}); retrying.")
        self._retry.start(int(self._backoff.next_delay() * 1000))

    def _load_history(self) -> None:
        """Fill the window from the daemon's history; live ticks continue after it."""
        # The latest answer wins: the window may change before an older one comes.
        self.history_call = self._ops.run(
            self._calls.history(self.window_s),
            self._on_history_loaded,
            on_failure=lambda failure: self.status_label.setText(f"No history to show: {failure}"),
            latest="history",
        )

    def _on_history_loaded(self, history: MetricsHistory) -> None:
        if history.window_s != self.window_s:
            return  # the window changed meanwhile: a newer answer is on its way
        self.buffer.load_history(history)
        self.history_loads += 1

    # -- the controls ---------------------------------------------------------------------

    def _on_window_box_changed(self, index: int) -> None:
        self.buffer.set_window(self.window_s)
        self._painted = (-1, -1)
        if self._bridge.state == ConnectionState.CONNECTED:
            self._load_history()

    def _on_pause_button_toggled(self, paused: bool) -> None:
        self.pause_button.setText("Resume" if paused else "Pause")
        self._painted = (-1, -1)
        self._show_status()

    def _apply_ui_settings(self, settings: UiSettings) -> None:
        self.repaint_timer.setInterval(round(1000 / settings.chart_refresh_hz))

    def _on_repaint_timer_timeout(self) -> None:
        # Throttled by time: however fast ticks come, this draws at most once per timeout.
        revisions = (self.buffer.revision, self.samples.revision)
        if self.paused or revisions == self._painted or not self.isVisible():
            return
        self._painted = revisions
        self.charts.paint(self.buffer, self.samples)
        latest = self.buffer.latest
        if latest is not None:
            self.flags.show_points(latest.instances)
        self._show_status()

    def _show_status(self) -> None:
        if self._bridge.state != ConnectionState.CONNECTED:
            return
        if self.paused:
            self.status_label.setText("Paused: the charts hold still; Resume shows the latest.")
            return
        if not self.following:
            return  # the retry's words stay until the stream is back
        latest = self.buffer.latest
        count = len(latest.instances) if latest else 0
        noun = "instance" if count == 1 else "instances"
        self.status_label.setText(f"Live, once a second: {count} {noun} running.")

    # -- the bridge -----------------------------------------------------------------------

    def _on_bridge_connected(self) -> None:
        self.status_label.setText("Connected: waiting for the first figures…")
        if self.isVisible():
            self._load_history()
            self._follow_metrics()

    def _on_bridge_disconnected(self, message: str) -> None:
        self.status_label.setText("Showing the last known figures: not connected to the daemon.")

    def _on_bridge_inventory_changed(self, inventory: HardwareInventory) -> None:
        self.charts.set_gpus(inventory.gpus)
        self.flags.set_gpu_present(bool(inventory.gpus))
        self._painted = (-1, -1)

    def _on_bridge_gateway_changed(self, listed: GatewayModelList) -> None:
        # Each instance's circuit: whether the gateway sends it requests now.
        self.flags.set_circuits(listed.circuits)
