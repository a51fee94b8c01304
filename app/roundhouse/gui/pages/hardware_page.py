"""The Hardware page: the inventory, the engine recommendation and live charts."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.settings import UiSettings
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.icons import set_icon
from roundhouse.gui.widgets.charts import HardwareCharts
from roundhouse.gui.widgets.inventory_view import InventoryView


class HardwarePage(QWidget):
    """Samples are buffered as they come; the page repaints on a timer (2-4 Hz)."""

    title = "Hardware"

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._shown_revision = -1
        heading = QLabel(self.title)
        heading.setObjectName("pageTitle")
        self.status_label = QLabel("Waiting for the daemon…")
        self.refresh_button = QPushButton("Refresh")
        set_icon(self.refresh_button, "refresh-cw")
        self.refresh_button.setToolTip("Look at the hardware again (GPUs, drivers, disk)")
        self.refresh_button.setEnabled(False)
        self.refresh_button.clicked.connect(self._on_refresh_button_clicked)
        header = QHBoxLayout()
        header.addWidget(heading)
        header.addSpacing(16)
        header.addWidget(self.status_label, 1)
        header.addWidget(self.refresh_button)

        self.inventory_view = InventoryView()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(self.inventory_view)
        scroll.setMinimumWidth(340)
        self.charts = HardwareCharts()
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(scroll)
        splitter.addWidget(self.charts)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        splitter.setChildrenCollapsible(False)
        splitter.setSizes([420, 640])

        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(splitter, 1)

        self.repaint_timer = QTimer(self)
        self.repaint_timer.timeout.connect(self._on_repaint_timer_timeout)
        self._apply_ui_settings(bridge.ui_settings)
        self.repaint_timer.start()

        bridge.when_connected(self._on_bridge_connected)
        bridge.disconnected.connect(self._on_bridge_disconnected)
        bridge.ui_settings_changed.connect(self._apply_ui_settings)
        bridge.inventory_changed.connect(self._on_bridge_inventory_changed)
        bridge.history_loaded.connect(self.charts.add_samples)
        bridge.sample_received.connect(self.charts.add_sample)
        bridge.refresh_failed.connect(self._on_bridge_refresh_failed)
        if bridge.inventory is not None:
            self._on_bridge_inventory_changed(bridge.inventory)

    def _apply_ui_settings(self, settings: UiSettings) -> None:
        self.repaint_timer.setInterval(round(1000 / settings.chart_refresh_hz))

    def _on_repaint_timer_timeout(self) -> None:
        # Throttled by time: however fast samples come, this draws at most once a tick.
        buffer = self.charts.buffer
        if buffer.revision == self._shown_revision:
            return
        self._shown_revision = buffer.revision
        self.charts.repaint_if_changed()
        latest = buffer.latest
        if latest is not None:
            self.inventory_view.show_sample(latest)

    def _on_refresh_button_clicked(self) -> None:
        self.refresh_button.setEnabled(False)
        self.status_label.setText("Looking at the hardware again…")
        self._bridge.refresh_inventory()

    def _on_bridge_connected(self) -> None:
        self.refresh_button.setEnabled(True)

    def _on_bridge_disconnected(self, message: str) -> None:
        self.refresh_button.setEnabled(False)
        self.status_label.setText("Showing the last known values: not connected to the daemon.")

    def _on_bridge_inventory_changed(self, inventory: HardwareInventory) -> None:
        self.inventory_view.show_inventory(inventory)
        self.charts.set_gpus(inventory.gpus)
        self._shown_revision = -1
        self.status_label.setText(f"Inventory taken at {time.strftime('%H:%M:%S')}")
        self.refresh_button.setEnabled(True)

    def _on_bridge_refresh_failed(self, message: str) -> None:
        self.status_label.setText(f"Refresh failed: {message}")
        self.refresh_button.setEnabled(self._bridge.state == ConnectionState.CONNECTED)
