"""Live charts of one paired machine's instance: its gateway tokens/s and its memory, drawn
with the Monitor's chart cards from the history the machine gives for it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from roundhouse.api.metrics import MetricsHistory
from roundhouse.base.units import GIB, MIB
from roundhouse.gui.widgets.chart_card import ChartCard, ValueFormatter
from roundhouse.gui.widgets.monitor_buffer import MetricsBuffer
from roundhouse.gui.widgets.monitor_charts import GATEWAY_RATE_HELP

# How far back the charts reach: the Monitor's default window.
WINDOW_S = 300.0
WAITING = "Waiting for the machine's figures…"


def _values(unit: str, digits: int) -> ValueFormatter:
    def format_values(values: Sequence[float | None]) -> str:
        return "  ".join("—" if v is None else f"{v:.{digits}f} {unit}" for v in values)

    return format_values


class PeerInstanceCharts(QWidget):
    """Tokens/s and memory (resident and GPU) of the instance picked on the Machines page."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.buffer = MetricsBuffer(WINDOW_S)
        self.instance = ""
        self.title_label = QLabel()
        self.title_label.setObjectName("sectionTitle")
        self.tps_chart = ChartCard(
            "Gateway tokens/s (output)", _values("tok/s", 1), unit="tokens/s"
        )
        self.tps_chart.title_label.setToolTip(GATEWAY_RATE_HELP)
        self.memory_unit = "GiB"
        self.memory_chart = ChartCard(
            "Memory (resident, GPU)", self._memory_text, unit=self.memory_unit
        )
        for chart in (self.tps_chart, self.memory_chart):
            chart.setMinimumHeight(180)
            chart.show_message(WAITING)
        row = QHBoxLayout()
        row.addWidget(self.tps_chart)
        row.addWidget(self.memory_chart)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title_label)
        layout.addLayout(row)
        self._series_shown = False

    def follow(self, machine: str, instance: str, label: str) -> None:
        """Chart `instance` of `machine` from now on (what was drawn is dropped)."""
        self.instance = instance
        self.buffer = MetricsBuffer(WINDOW_S)
        self.title_label.setText(f"{label} on {machine}: the last {WINDOW_S / 60:.0f} minutes")
        self._series_shown = False
        for chart in (self.tps_chart, self.memory_chart):
            chart.show_message(WAITING)

    def show_history(self, history: MetricsHistory) -> None:
        self.buffer.load_history(history)
        instances = self.buffer.instances()
        end = self.buffer.end_t
        if self.instance not in instances or end is None:
            for chart in (self.tps_chart, self.memory_chart):
                chart.show_message("No figures yet: the machine samples its instances each second.")
            self._series_shown = False
            return
        if not self._series_shown:
            self.tps_chart.set_series(["tokens/s"])
            self.memory_chart.set_series(["resident", "GPU"])
            self._series_shown = True
        span = (end - WINDOW_S, end)
        t = self.buffer.times()
        self.tps_chart.set_data(t, [self.buffer.column(self.instance, "output_tps")], span)
        memory = [
            self.buffer.column(self.instance, "rss_bytes"),
            self.buffer.column(self.instance, "vram_bytes"),
        ]
        largest = max((float(np.nanmax(m)) for m in memory if np.isfinite(m).any()), default=0.0)
        self.memory_unit = "GiB" if largest >= GIB else "MiB"
        self.memory_chart.set_unit(self.memory_unit)
        scale = GIB if self.memory_unit == "GiB" else MIB
        self.memory_chart.set_data(t, [m / scale for m in memory], span)

    def _memory_text(self, values: Sequence[float | None]) -> str:
        digits = 2 if self.memory_unit == "GiB" else 0
        return _values(self.memory_unit, digits)(values)
