"""An instance's own metrics (llama.cpp, vLLM, SGLang), read again every 2 s while shown."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QHideEvent, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.instances import InstanceInfo, InstanceMetrics
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.widgets.instances_model import model_name
from roundhouse.gui.widgets.table_view import cell_text

REFRESH_MS = 2000
# After a failure other than "no metrics": ask again, less often.
RETRY_MS = 5000


def value_in_words(value: float) -> str:
    """Counts as whole numbers with separators, rates and averages with two decimals."""
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.2f}"


class MetricsDialog(QDialog):
    """A table of the engine's series, summed over labels; or why the engine has none."""

    def __init__(self, bridge: DaemonBridge, info: InstanceInfo, parent: QWidget | None = None):
        super().__init__(parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self.instance_id = info.id
        self._call: Call | None = None
        self._following = False
        self.unavailable = False
        self.metrics: InstanceMetrics | None = None
        self.setWindowTitle(f"Metrics of {info.engine.value}: {model_name(info.model)}")
        self.resize(560, 460)
        self.header = QLabel(f"{info.engine.value} · {model_name(info.model)} · {info.url}")
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels(["Metric", "Value"])
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.setAlternatingRowColors(True)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self.status = QLabel("Reading the metrics…")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.status)
        layout.addWidget(buttons)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._fetch)

    def values(self) -> dict[str, str]:
        """What the table shows: metric name -> value in words."""
        return {
            cell_text(self.table, row, 0): cell_text(self.table, row, 1)
            for row in range(self.table.rowCount())
        }

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._following and not self.unavailable:
            self._following = True
            self._fetch()

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        self._following = False
        self._timer.stop()

    def _fetch(self) -> None:
        if self._call is not None or not self._following:
            return
        self._call = call = self._bridge.instance_metrics(self.instance_id)
        self._ops.run(call, self._on_metrics_succeeded, on_failure=self._on_metrics_failed)

    def _on_metrics_succeeded(self, metrics: InstanceMetrics) -> None:
        self._call = None
        self.metrics = metrics
        names = sorted(metrics.values)
        self.table.setRowCount(len(names))
        for row, name in enumerate(names):
            value = QTableWidgetItem(value_in_words(metrics.values[name]))
            value.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.table.setItem(row, 0, QTableWidgetItem(name))
            self.table.setItem(row, 1, value)
        stamp = time.strftime("%H:%M:%S", time.localtime(metrics.fetched_at))
        count = "no series yet" if not names else f"{len(names)} series"
        self.status.setText(f"From {metrics.url} at {stamp}, {count}; read every 2 s.")
        if self._following:
            self._timer.start(REFRESH_MS)

    def _on_metrics_failed(self, failure: Failure) -> None:
        self._call = None
        if failure.status == 404:
            # No metrics for this engine (or the instance is gone): say why, ask no more.
            self.unavailable = True
            self.table.hide()
            self.status.setText(failure.detail)
            return
        self.status.setText(f"The metrics were not read: {failure}. Trying again…")
        if self._following:
            self._timer.start(RETRY_MS)
