"""Live charts of CPU, RAM, GPU utilization and VRAM, repainted on a timer from a buffer."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from PySide6.QtWidgets import QGridLayout, QWidget

from roundhouse.api.hardware import GpuInfo, HardwareSample
from roundhouse.base.units import GIB
from roundhouse.gui.widgets.chart_card import ChartCard
from roundhouse.gui.widgets.sample_buffer import SampleBuffer

# A chart narrower than this looks like a bar code; early on, leave room to the right.
MIN_SPAN_S = 30.0
NAN = float("nan")


def _percent(values: Sequence[float | None]) -> str:
    return "  ".join("—" if v is None else f"{v:.0f} %" for v in values)


def _gib(values: Sequence[float | None]) -> str:
    return "  ".join("—" if v is None else f"{v:.1f} GiB" for v in values)


class HardwareCharts(QWidget):
    """Samples go into a bounded buffer at any rate; `repaint_if_changed` draws the latest."""

    def __init__(self, window_s: float = 900.0, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.buffer = SampleBuffer(window_s)
        self._painted_revision = -1
        self._gpu_indexes: list[int] = []
        self.cpu_chart = ChartCard("CPU", _percent, unit="%")
        self.ram_chart = ChartCard("RAM used", _gib, unit="GiB")
        self.gpu_util_chart = ChartCard("GPU utilization", _percent, unit="%")
        self.vram_chart = ChartCard("VRAM used", _gib, unit="GiB")
        self.cpu_chart.set_series(["CPU"])
        self.cpu_chart.set_y_range(0, 100)
        self.ram_chart.set_series(["RAM"])
        self.gpu_util_chart.set_y_range(0, 100)
        for chart in (self.gpu_util_chart, self.vram_chart):
            chart.show_message("Waiting for the hardware inventory…")
        self._grid = layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(12)
        layout.addWidget(self.cpu_chart, 0, 0)
        layout.addWidget(self.ram_chart, 0, 1)
        layout.addWidget(self.gpu_util_chart, 1, 0)
        layout.addWidget(self.vram_chart, 1, 1)
        layout.setRowStretch(0, 1)
        layout.setRowStretch(1, 1)

    def add_samples(self, samples: Iterable[HardwareSample]) -> None:
        self.buffer.extend(samples)

    def add_sample(self, sample: HardwareSample) -> None:
        self.buffer.append(sample)

    def set_gpus(self, gpus: Sequence[GpuInfo]) -> None:
        """The GPUs to chart, from the inventory; none makes the GPU charts say so."""
        indexes = [gpu.index for gpu in gpus]
        if indexes == self._gpu_indexes and indexes:
            return
        self._gpu_indexes = indexes
        # Without a GPU its charts shrink to their message and the CPU and RAM charts grow.
        self._grid.setRowStretch(1, 1 if gpus else 0)
        if not gpus:
            message = "No GPU was seen on this machine, so there is nothing to chart."
            self.gpu_util_chart.show_message(message)
            self.vram_chart.show_message(message)
            return
        names = [f"GPU {gpu.index}" for gpu in gpus]
        self.gpu_util_chart.set_series(names)
        self.vram_chart.set_series(names)
        totals = [gpu.memory_total_bytes for gpu in gpus if gpu.memory_total_bytes]
        if totals:
            self.vram_chart.set_y_range(0, max(totals) / GIB)
        self._painted_revision = -1

    def repaint_if_changed(self) -> bool:
        """Draw the buffer if it changed since the last paint; whether it drew."""
        if self.buffer.revision == self._painted_revision or not len(self.buffer):
            return False
        self._painted_revision = self.buffer.revision
        samples = self.buffer.samples
        t = np.fromiter((s.t for s in samples), float, len(samples))
        span = (min(t[0], t[-1] - MIN_SPAN_S), t[-1])
        cpu = np.fromiter((s.cpu_percent for s in samples), float, len(samples))
        ram = np.fromiter((s.ram_used_bytes / GIB for s in samples), float, len(samples))
        self.cpu_chart.set_data(t, [cpu], span)
        self.ram_chart.set_y_range(0, samples[-1].ram_total_bytes / GIB)
        self.ram_chart.set_data(t, [ram], span)
        if self._gpu_indexes:
            util = [self._gpu_series(samples, i, "utilization_percent") for i in self._gpu_indexes]
            vram = [self._gpu_series(samples, i, "memory_used_bytes") for i in self._gpu_indexes]
            self.gpu_util_chart.set_data(t, util, span)
            self.vram_chart.set_data(t, [v / GIB for v in vram], span)
        return True

    def point_count(self) -> int:
        return self.cpu_chart.point_count()

    @staticmethod
    def _gpu_series(samples: Sequence[HardwareSample], index: int, field: str) -> np.ndarray:
        values = []
        for sample in samples:
            gpu = next((g for g in sample.gpus if g.index == index), None)
            value = getattr(gpu, field) if gpu is not None else None
            values.append(NAN if value is None else float(value))
        return np.asarray(values, dtype=float)
