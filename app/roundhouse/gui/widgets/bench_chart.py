"""Bar charts comparing runs: output throughput, and TTFT and TPOT at p50 and p99."""

from __future__ import annotations

import os
import time

from PySide6.QtWidgets import QHBoxLayout, QWidget

# pyqtgraph picks its Qt binding at import: make it the one the app already uses.
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")
import pyqtgraph as pg

from roundhouse.api.bench import BenchResult, counts_line, run_name
from roundhouse.gui.widgets.chart_card import SERIES_COLOURS

LATENCIES = ("TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99")
BAR_WIDTH = 0.8


def series_name(result: BenchResult) -> str:
    """A run in words, never its id: label or model, engine, workload, time, and failures."""
    m = result.metrics
    name = run_name(result)
    return name + (f" ({counts_line(m.completed, m.failed)})" if m.failed else "")


def tick_name(result: BenchResult) -> str:
    """The throughput bar's label: the name on two lines, short enough for a bar."""
    req = result.request
    engine = f" on {result.engine}" if result.engine else ""
    when = time.strftime("%H:%M", time.localtime(result.created_at))
    m = result.metrics
    failed = f", {m.failed} failed" if m.failed else ""
    return f"{req.label or req.model}{engine}\n{when}{failed}"


def latency_values(result: BenchResult) -> list[float]:
    m = result.metrics
    return [m.ttft.median, m.ttft.p99, m.tpot.median, m.tpot.p99]


class BenchChart(QWidget):
    """One bar per run for throughput; a group of bars per latency, a colour per run."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.throughput = pg.PlotWidget(title="Output tokens/s")
        self.latency = pg.PlotWidget(title="Latency (ms)")
        self.latency.addLegend(offset=(-10, 10))
        for plot in (self.throughput, self.latency):
            plot.setMouseEnabled(x=False, y=False)
            plot.setMenuEnabled(False)
            plot.setMinimumHeight(180)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.throughput, 1)
        layout.addWidget(self.latency, 2)
        self.bars: list[pg.BarGraphItem] = []
        self.names: list[str] = []

    def show_results(self, results: list[BenchResult]) -> None:
        self.throughput.clear()
        self.latency.clear()
        self.bars = []
        names = [series_name(r) for r in results]
        self.names = names
        for i, result in enumerate(results):
            brush = SERIES_COLOURS[i % len(SERIES_COLOURS)]
            bar = pg.BarGraphItem(
                x=[i], height=[result.metrics.output_throughput], width=BAR_WIDTH, brush=brush
            )
            self.throughput.addItem(bar)
            self.bars.append(bar)
            width = BAR_WIDTH / max(len(results), 1)
            xs = [g + (i - (len(results) - 1) / 2) * width for g in range(len(LATENCIES))]
            group = pg.BarGraphItem(
                x=xs, height=latency_values(result), width=width, brush=brush, name=names[i]
            )
            self.latency.addItem(group)
            self.bars.append(group)
        ticks = [(i, tick_name(r)) for i, r in enumerate(results)]
        self.throughput.getAxis("bottom").setTicks([ticks])
        self.latency.getAxis("bottom").setTicks([list(enumerate(LATENCIES))])
