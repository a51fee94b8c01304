"""Bar charts comparing runs: output throughput, and TTFT and TPOT at p50 and p99; each run
named in words below them (label or model, engine, workload, time, failures), never by id."""

from __future__ import annotations

import html
import os

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

# pyqtgraph picks its Qt binding at import: make it the one the app already uses.
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")
import pyqtgraph as pg

from roundhouse.api.bench import BenchResult, BenchStatus, counts_line, run_name
from roundhouse.gui.widgets.chart_card import SERIES_COLOURS

LATENCIES = ("TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99")
BAR_WIDTH = 0.8


def series_name(result: BenchResult) -> str:
    """A run in words, never its id: label or model, engine, workload, time, and failures."""
    m = result.metrics
    name = run_name(result)
    if result.status is BenchStatus.FAILED:
        return name + f" (every request failed: no figures to chart; {m.failed} failed)"
    return name + (f" ({counts_line(m.completed, m.failed)})" if m.failed else "")


def latency_values(result: BenchResult) -> list[float]:
    m = result.metrics
    return [m.ttft.median, m.ttft.p99, m.tpot.median, m.tpot.p99]


class BenchChart(QWidget):
    """One bar per run for throughput; a group of bars per latency, a colour per run."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.throughput = pg.PlotWidget(title="Output tokens/s")
        self.latency = pg.PlotWidget(title="Latency (ms)")
        for plot in (self.throughput, self.latency):
            plot.setMouseEnabled(x=False, y=False)
            plot.setMenuEnabled(False)
            plot.setMinimumHeight(180)
        # The runs' names below both charts, by colour and number: a plot's own legend sits
        # over the bars, and an axis drops tick labels that do not fit beside each other.
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.legend.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        plots = QHBoxLayout()
        plots.addWidget(self.throughput, 1)
        plots.addWidget(self.latency, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(plots, 1)
        layout.addWidget(self.legend)
        self.bars: list[pg.BarGraphItem] = []
        self.names: list[str] = []

    def show_results(self, results: list[BenchResult]) -> None:
        self.throughput.clear()
        self.latency.clear()
        self.bars = []
        names = [series_name(r) for r in results]
        self.names = names
        for i, result in enumerate(results):
            if result.status is BenchStatus.FAILED:
                continue  # no figures: a bar of zeros would read as a measured result
            brush = SERIES_COLOURS[i % len(SERIES_COLOURS)]
            bar = pg.BarGraphItem(
                x=[i], height=[result.metrics.output_throughput], width=BAR_WIDTH, brush=brush
            )
            self.throughput.addItem(bar)
            self.bars.append(bar)
            width = BAR_WIDTH / max(len(results), 1)
            xs = [g + (i - (len(results) - 1) / 2) * width for g in range(len(LATENCIES))]
            group = pg.BarGraphItem(x=xs, height=latency_values(result), width=width, brush=brush)
            self.latency.addItem(group)
            self.bars.append(group)
        ticks = [(i, str(i + 1)) for i in range(len(results))]
        self.throughput.getAxis("bottom").setTicks([ticks])
        self.legend.setText(
            "<br>".join(
                f'<span style="color:{SERIES_COLOURS[i % len(SERIES_COLOURS)]}">■</span> '
                f"{i + 1}. {html.escape(name)}"
                for i, name in enumerate(names)
            )
        )
        self.latency.getAxis("bottom").setTicks([list(enumerate(LATENCIES))])
