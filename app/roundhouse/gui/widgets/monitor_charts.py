"""The Monitor's live charts: per instance tokens/s, requests, VRAM (stacked), CPU and RAM,
and each GPU's utilization; drawn from the buffers only when told to."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QGridLayout, QWidget

from roundhouse.api.hardware import GpuInfo, HardwareSample
from roundhouse.base.units import GIB, MIB
from roundhouse.gui.widgets.chart_card import SERIES_COLOURS, ChartCard
from roundhouse.gui.widgets.monitor_buffer import MetricsBuffer
from roundhouse.gui.widgets.sample_buffer import SampleBuffer

# What the gateway's rate counts, beside the engine's own (the Monitor's table and chart).
GATEWAY_RATE_HELP = (
    "Output tokens the gateway passed on to clients in each second, all of the instance's "
    "requests together. The seconds spent reading the prompt and the pauses between "
    "requests count too, so it reads below the engine's own rate (the table's Engine "
    "tok/s: one reply's speed while the engine generates it) for short replies, and "
    "above it when several requests run at once."
)
NO_INSTANCE = "No instance is running: start one on the Engines page, and it shows here."
NO_VRAM = (
    "No per-process VRAM on this machine: it is read with NVML, so only on NVIDIA GPUs "
    "(the Hardware page shows each GPU's total)."
)
NO_GPU = "No GPU was seen on this machine, so there is no utilization to chart."
NO_GPU_VRAM = "No GPU was seen on this machine: every instance runs in RAM (the RAM chart)."


def _joined(unit: Callable[[float], str]) -> Callable[[Sequence[float | None]], str]:
    def format_values(values: Sequence[float | None]) -> str:
        return "  ".join("—" if v is None else unit(v) for v in values)

    return format_values


def _stacked_gib(values: Sequence[float | None]) -> str:
    """The stacked curves hold running totals: each instance's own share is the step."""
    below, parts = 0.0, []
    for value in values:
        if value is None:
            parts.append("—")
            continue
        parts.append(f"{value - below:.1f} GiB")
        below = value
    return "  ".join(parts)


class MonitorCharts(QWidget):
    """Six ChartCards; `paint` sets data on the existing curves (series change rarely)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tps_chart = ChartCard(
            "Gateway tokens/s (output, all requests)",
            _joined(lambda v: f"{v:.1f} tok/s"),
            unit="tokens/s",
        )
        self.tps_chart.title_label.setToolTip(GATEWAY_RATE_HELP)
        self.flight_chart = ChartCard(
            "Requests in flight (running + queued)",
            _joined(lambda v: f"{v:.0f}"),
            unit="requests",
        )
        self.vram_chart = ChartCard("VRAM by instance (stacked)", _stacked_gib, unit="GiB")
        self.gpu_chart = ChartCard(
            "GPU utilization", _joined(lambda v: f"{v:.0f} %"), unit="% busy"
        )
        self.cpu_chart = ChartCard(
            "CPU (% of one core)", _joined(lambda v: f"{v:.0f} %"), unit="% of one core"
        )
        # A small engine holds tens of MiB, a large one tens of GiB: the axis follows.
        self.ram_unit = "GiB"
        self.ram_chart = ChartCard(
            "RAM (resident)",
            _joined(lambda v: f"{v:.2f} GiB" if self.ram_unit == "GiB" else f"{v:.0f} MiB"),
            unit=self.ram_unit,
        )
        self.instance_charts = (self.tps_chart, self.flight_chart, self.cpu_chart, self.ram_chart)
        self.gpu_chart.set_y_range(0, 100)
        self.gpu_chart.show_message("Waiting for the hardware inventory…")
        self._instances: list[str] = []
        self._labels: list[str] = []
        self._gpu_indexes: list[int] = []
        self._gpus_known = False  # the hardware inventory has answered
        # "" until the first paint, then "none" (no reading: a note) or "data".
        self._vram_mode = ""
        for chart in (*self.instance_charts, self.vram_chart):
            chart.show_message(NO_INSTANCE)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setSpacing(12)
        order = (self.tps_chart, self.flight_chart, self.vram_chart, self.gpu_chart)
        for index, chart in enumerate((*order, self.cpu_chart, self.ram_chart)):
            grid.addWidget(chart, index // 2, index % 2)

    def set_gpus(self, gpus: Sequence[GpuInfo]) -> None:
        indexes = [gpu.index for gpu in gpus]
        if indexes == self._gpu_indexes and indexes:
            return
        self._gpu_indexes = indexes
        self._gpus_known = True
        if not indexes:
            self.gpu_chart.show_message(NO_GPU)
            return
        self.gpu_chart.set_series([f"GPU {i}" for i in indexes])

    def paint(self, metrics: MetricsBuffer, samples: SampleBuffer) -> None:
        """Draw the window that ends at the latest tick of either buffer."""
        ends = [t for t in (metrics.end_t, samples.latest.t if samples.latest else None) if t]
        if not ends:
            return
        span = (max(ends) - metrics.window_s, max(ends))
        self._paint_instances(metrics, span)
        if self._gpu_indexes and len(samples):
            picked = [s for s in samples.samples if s.t >= span[0]]
            t = np.fromiter((s.t for s in picked), float, len(picked))
            util = [_gpu_utilization(picked, i) for i in self._gpu_indexes]
            self.gpu_chart.set_data(t, util, span)

    def _paint_instances(self, metrics: MetricsBuffer, span: tuple[float, float]) -> None:
        instances = metrics.instances()
        labels = [metrics.labels.get(i, i) for i in instances]
        if not instances:
            if self._instances:
                for chart in (*self.instance_charts, self.vram_chart):
                    chart.show_message(NO_INSTANCE)
                self._instances, self._labels, self._vram_mode = [], [], ""
            return
        if instances != self._instances or labels != self._labels:
            self._instances, self._labels = instances, labels
            for chart in self.instance_charts:
                chart.set_series(labels)
            self._vram_mode = ""
        t = metrics.times()
        self.tps_chart.set_data(t, [metrics.column(i, "output_tps") for i in instances], span)
        self.flight_chart.set_data(
            t, [metrics.column(i, "running", "queued") for i in instances], span
        )
        self.cpu_chart.set_data(t, [metrics.column(i, "cpu_percent") for i in instances], span)
        ram = [metrics.column(i, "rss_bytes") for i in instances]
        largest = max((float(np.nanmax(r)) for r in ram if np.isfinite(r).any()), default=0.0)
        self.ram_unit = "GiB" if largest >= GIB else "MiB"
        self.ram_chart.set_unit(self.ram_unit)
        scale = GIB if self.ram_unit == "GiB" else MIB
        self.ram_chart.set_data(t, [r / scale for r in ram], span)
        self._paint_vram(metrics, instances, labels, t, span)

    def _paint_vram(
        self,
        metrics: MetricsBuffer,
        instances: list[str],
        labels: list[str],
        t: np.ndarray,
        span: tuple[float, float],
    ) -> None:
        if self._gpus_known and not self._gpu_indexes:
            # An engine may still report a VRAM figure (Ollama's size_vram says 0): without
            # a GPU it means nothing, and an empty chart of zeros reads like a fault.
            if self._vram_mode != "no gpu":
                self._vram_mode = "no gpu"
                self.vram_chart.show_message(NO_GPU_VRAM)
            return
        vram = [metrics.column(i, "vram_bytes") / GIB for i in instances]
        if not any(np.isfinite(v).any() for v in vram):
            if self._vram_mode != "none":
                self._vram_mode = "none"
                self.vram_chart.show_message(NO_VRAM)
            return
        if self._vram_mode != "data":
            self._vram_mode = "data"
            self.vram_chart.set_series(labels)
            self._fill_stacked(self.vram_chart)
        # Running totals, bottom first; an instance with no reading adds nothing.
        stacked = np.cumsum([np.nan_to_num(v) for v in vram], axis=0)
        self.vram_chart.set_data(t, list(stacked), span)

    @staticmethod
    def _fill_stacked(chart: ChartCard) -> None:
        for index, curve in enumerate(chart.plot.getPlotItem().listDataItems()):
            colour = QColor(SERIES_COLOURS[index % len(SERIES_COLOURS)])
            colour.setAlpha(90)
            curve.setFillLevel(0)
            curve.setBrush(QBrush(colour))
            # Lower layers over higher ones, so each band shows its own colour.
            curve.setZValue(-index)


def _gpu_utilization(samples: Sequence[HardwareSample], index: int) -> np.ndarray:
    values = []
    for sample in samples:
        gpu = next((g for g in sample.gpus if g.index == index), None)
        value = gpu.utilization_percent if gpu is not None else None
        values.append(np.nan if value is None else float(value))
    return np.asarray(values, dtype=float)


def curve_data(chart: ChartCard, name: str) -> np.ndarray:
    """The y values the chart's curve named `name` draws (empty when there is none)."""
    for curve in chart.plot.getPlotItem().listDataItems():
        if curve.name() == name:
            _, y = curve.getData()
            return np.empty(0) if y is None else np.asarray(y)
    return np.empty(0)
