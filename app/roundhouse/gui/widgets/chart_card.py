"""One titled live chart (pyqtgraph) with a value line and hover read-out."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QObject, QPointF, Qt
from PySide6.QtWidgets import (
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

# pyqtgraph picks its Qt binding at import: make it the one the app already uses.
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")
import numpy as np
import pyqtgraph as pg

SERIES_COLOURS = ("#c8643b", "#2f7fc1", "#2e9e4f", "#8e5cc4", "#c9a227", "#d1362f")

ValueFormatter = Callable[[Sequence[float | None]], str]


class ChartCard(QWidget):
    """A chart of one or more series over time; shows a message instead when empty."""

    def __init__(
        self,
        title: str,
        formatter: ValueFormatter,
        parent: QWidget | None = None,
        *,
        unit: str = "",
    ):
        super().__init__(parent)
        self.unit = ""
        self._formatter = formatter
        self._x = np.empty(0)
        self._ys: list[np.ndarray] = []
        self._latest_text = ""
        self._hovering = False
        self.title_label = QLabel(title)
        self.title_label.setObjectName("chartTitle")
        self.value_label = QLabel("—")
        self.value_label.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.plot = pg.PlotWidget(axisItems={"bottom": pg.DateAxisItem()})
        # Left to the scene, one new set of points repaints the view twice (the item update,
        # then the scene's queued index update): the chart says when to repaint instead, once
        # per change. Resizes and exposes still repaint on their own.
        self.plot.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.NoViewportUpdate)
        self._style_plot()
        self.set_unit(unit)
        self.empty_label = QLabel()
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.plot)
        self.stack.addWidget(self.empty_label)
        header = QHBoxLayout()
        header.addWidget(self.title_label)
        header.addWidget(self.value_label, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(header)
        layout.addWidget(self.stack, 1)
        self._curves: list[pg.PlotDataItem] = []
        self._cursor = pg.InfiniteLine(
            angle=90, pen=pg.mkPen("#888888", style=Qt.PenStyle.DashLine)
        )
        self._cursor.hide()
        self.plot.addItem(self._cursor, ignoreBounds=True)
        self.plot.scene().sigMouseMoved.connect(self._on_scene_mouse_moved)
        self.plot.installEventFilter(self)

    def _style_plot(self) -> None:
        palette = self.palette()
        self.plot.setBackground(palette.base().color())
        item = self.plot.getPlotItem()
        item.setMouseEnabled(x=False, y=False)
        item.setMenuEnabled(False)
        item.hideButtons()
        item.showGrid(x=True, y=True, alpha=0.2)
        text_pen = pg.mkPen(palette.text().color())
        for axis in ("left", "bottom"):
            item.getAxis(axis).setTextPen(text_pen)
            item.getAxis(axis).setLabel(color=palette.text().color().name())
        # The ticks are clock times: say so, as the left axis names its unit.
        item.getAxis("bottom").setLabel("local time")
        self.plot.setMinimumHeight(140)

    def set_unit(self, unit: str) -> None:
        """Name the unit of the left axis's numbers on the axis itself ("GiB", "tokens/s")."""
        if unit == self.unit and unit:
            return
        self.unit = unit
        axis = self.plot.getPlotItem().getAxis("left")
        # The unit as written: pyqtgraph's SI prefixes would make "mGiB" of a small value.
        axis.enableAutoSIPrefix(False)
        axis.setLabel(unit or None)  # none: no label at all

    def set_series(self, names: Sequence[str]) -> None:
        """One curve per name; a legend appears when there is more than one."""
        for curve in self._curves:
            self.plot.removeItem(curve)
        item = self.plot.getPlotItem()
        if item.legend is not None:
            item.legend.scene().removeItem(item.legend)
            item.legend = None
        if len(names) > 1:
            item.addLegend(offset=(8, 8))
        self._curves = [
            self.plot.plot(
                [], [], name=name, pen=pg.mkPen(SERIES_COLOURS[i % len(SERIES_COLOURS)], width=2)
            )
            for i, name in enumerate(names)
        ]
        self.stack.setCurrentWidget(self.plot)
        self._fit_stack()
        self._redraw()

    def show_message(self, message: str) -> None:
        self.empty_label.setText(message)
        self.value_label.setText("")
        self.stack.setCurrentWidget(self.empty_label)
        self._fit_stack()

    def _fit_stack(self) -> None:
        # A stacked widget is as tall as its tallest page: size it to the page shown.
        showing_plot = self.stack.currentWidget() is self.plot
        self.stack.setMaximumHeight(16_777_215 if showing_plot else 80)

    def set_y_range(self, low: float, high: float) -> None:
        self.plot.setYRange(low, high, padding=0.02)
        self._redraw()

    def _redraw(self) -> None:
        self.plot.viewport().update()

    def set_data(
        self, x: np.ndarray, ys: Sequence[np.ndarray], x_span: tuple[float, float]
    ) -> None:
        self._x = x
        self._ys = list(ys)
        for curve, y in zip(self._curves, ys, strict=False):
            # NaN marks a value the daemon could not read: draw a gap, not a drop to zero.
            curve.setData(x, y, connect="finite")
        self.plot.setXRange(*x_span, padding=0)
        self._redraw()
        self._latest_text = self._formatter([_last_finite(y) for y in ys])
        if not self._hovering:
            self.value_label.setText(self._latest_text)

    def point_count(self) -> int:
        """How many points the first curve draws (what the tests watch grow)."""
        if not self._curves:
            return 0
        x_data, _ = self._curves[0].getData()
        return 0 if x_data is None else len(x_data)

    # Hover: show the values under the mouse instead of the latest ones.

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        # The theme changed: the plot's background and axes are drawn from the palette.
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "plot"):
            self._style_plot()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.plot and event.type() == QEvent.Type.Leave:
            self._end_hover()
        return super().eventFilter(watched, event)

    def _on_scene_mouse_moved(self, position: QPointF) -> None:
        view = self.plot.getPlotItem().getViewBox()
        if len(self._x) == 0 or not view.sceneBoundingRect().contains(position):
            self._end_hover()
            return
        t = view.mapSceneToView(position).x()
        index = _nearest(self._x, t)
        values = [_finite_or_none(y[index]) for y in self._ys]
        stamp = time.strftime("%H:%M:%S", time.localtime(self._x[index]))
        self._hovering = True
        self._cursor.setPos(self._x[index])
        self._cursor.show()
        self._redraw()
        self.value_label.setText(f"at {stamp}: {self._formatter(values)}")

    def _end_hover(self) -> None:
        if self._hovering:
            self._hovering = False
            self._cursor.hide()
            self._redraw()
            self.value_label.setText(self._latest_text)


def _nearest(x: np.ndarray, t: float) -> int:
    """The index of the point nearest to `t` in the sorted `x` (the mouse is rarely on one)."""
    index = int(np.clip(np.searchsorted(x, t), 0, len(x) - 1))
    if index > 0 and abs(t - x[index - 1]) <= abs(x[index] - t):
        index -= 1
    return index


def _finite_or_none(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _last_finite(y: np.ndarray) -> float | None:
    finite = y[np.isfinite(y)]
    return float(finite[-1]) if len(finite) else None
