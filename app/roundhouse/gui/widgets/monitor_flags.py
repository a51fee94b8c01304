"""Per instance, the figures no other tool shows: bandwidth use and a CPU fallback (where
there is a GPU), the engine's own tokens/s beside the gateway's, and the gateway's circuit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.gateway import CircuitState
from roundhouse.api.metrics import RATES_CAPTION, InstanceMetrics
from roundhouse.gui.theme.roles import RoleMap
from roundhouse.gui.widgets.monitor_buffer import label_of

# The daemon flags bandwidth use below this share (core.metrics.flags.LOW_BANDWIDTH_USE).
LOW_SHARE_WORDS = "40 %"
# Columns added later go last: the columns before them keep their places.
COLUMNS = (
    "Instance",
    "Gateway tok/s",
    "Bandwidth use",
    "CPU fallback",
    "Engine tok/s",
    "Gateway circuit",
)
CIRCUIT_COLUMN = 5
# Both say something of a GPU only: on a machine without one they are hidden.
GPU_COLUMNS = (2, 3)
HEADER_TIPS = (
    "The model and the instance's id",
    "Output tokens the gateway passed on in the last second, all of this instance's "
    "requests together: what clients received. Reading each prompt and the pauses between "
    "requests count too, so it reads below the engine's own rate for short replies, and "
    "above it when several requests run at once.",
    "How much of the GPU's peak memory bandwidth the instance uses while it generates: "
    f"below {LOW_SHARE_WORDS} it is flagged.",
    "Whether the instance runs on the CPU though it was asked to use the GPU.",
    "One reply's generation speed as the engine measured it, once the prompt is read "
    "(median of recent requests): the model's own speed, without the prompt, the network "
    "or idle time.",
    "Whether the gateway sends requests to the instance: closed (it does), open (it failed "
    "several times in a row and takes none until a health check finds it answering), "
    "half-open (the check passed; the next request's outcome decides). Details: "
    "`roundhouse gateway routes`.",
)


class Level(StrEnum):
    OK = "ok"
    WARN = "warn"
    ERROR = "error"
    UNKNOWN = "unknown"


# Colour roles of the theme in force (the words say the level too).
LEVEL_COLOURS = RoleMap(
    {Level.WARN: "warning_text", Level.ERROR: "danger_text", Level.UNKNOWN: "text_muted"}
)


@dataclass(frozen=True)
class Cell:
    text: str
    level: Level
    tooltip: str = ""


def engine_rate_cell(point: InstanceMetrics) -> Cell:
    """Generation tokens/s as the engine measured it, which leaves out the gateway and the
    network; the prompt rate in the tooltip."""
    out, prompt = point.engine_output_tps, point.engine_prompt_tps
    if out is None and prompt is None:
        return Cell(
            "—",
            Level.UNKNOWN,
            "The engine has not reported its own rate: llama.cpp does after each reply, "
            "vLLM and SGLang in their /metrics once they have served a request; for Ollama "
            "it is taken from its streamed replies.",
        )
    text = "—" if out is None else f"{out:.1f}"
    tooltip = (
        "On the engine's side: llama.cpp's median of recent requests, vLLM's and SGLang's "
        "since their last /metrics scrape."
    )
    if prompt is not None:
        tooltip += f" Prompt processing: {prompt:.0f} tok/s."
    return Cell(text, Level.OK, tooltip)


def bandwidth_cell(point: InstanceMetrics) -> Cell:
    """The share of the GPU's peak bandwidth the instance reads its weights at."""
    use, note = point.bandwidth_use, point.bandwidth_note
    if use is None and note is None:
        return Cell("— (idle)", Level.UNKNOWN, "Measured while the instance generates tokens.")
    if use is None:
        return Cell("unknown", Level.UNKNOWN, f"Not measured: {note}.")
    tooltip = "Tokens/s x the bytes of weights read per token / the GPU's peak memory bandwidth" + (
        f": {note}." if note else "."
    )
    if point.bandwidth_low:
        return Cell(f"{use:.0%} (low, below {LOW_SHARE_WORDS})", Level.WARN, tooltip)
    return Cell(f"{use:.0%}", Level.OK, tooltip)


def fallback_cell(point: InstanceMetrics) -> Cell:
    """Whether the instance silently runs on the CPU though it should use the GPU."""
    if point.cpu_fallback:
        return Cell(f"yes: {point.cpu_fallback}", Level.ERROR, point.cpu_fallback)
    return Cell("none seen", Level.OK, "Its layers are where they were asked to be.")


def circuit_cell(state: CircuitState) -> Cell:
    """The gateway's circuit of one instance, in words."""
    if state == CircuitState.OPEN:
        return Cell(
            "open: takes no requests",
            Level.ERROR,
            "It failed several times in a row: requests go to other instances of its model "
            "(or its fallbacks) until a health check finds it answering.",
        )
    if state == CircuitState.HALF_OPEN:
        return Cell(
            "half-open",
            Level.WARN,
            "It answers its health check again: the next request's outcome closes the "
            "circuit, or opens it for longer.",
        )
    return Cell("closed", Level.OK, "The gateway sends it requests.")


def alert_text(points: Sequence[InstanceMetrics]) -> str:
    """One line per instance that fell back to the CPU; '' when none did."""
    return "\n".join(
        f"{label_of(p)} runs on the CPU: {p.cpu_fallback}. It will be slow; check the "
        "engine's GPU support and the layers it offloads (Engines page, its log)."
        for p in points
        if p.cpu_fallback
    )


class MonitorFlags(QWidget):
    """A row per instance, coloured by level; a banner above it while any falls back."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.alert_label = QLabel()
        self.alert_label.setWordWrap(True)
        # The colour from app.qss by tone: it follows the theme.
        self.alert_label.setProperty("tone", "bad")
        bold = self.alert_label.font()
        bold.setBold(True)
        self.alert_label.setFont(bold)
        self.alert_label.hide()
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # The instance's name takes the room left: the figures stay next to it.
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column, tip in enumerate(HEADER_TIPS):
            heading = self.table.horizontalHeaderItem(column)
            if heading is not None:
                heading.setToolTip(tip)
        self.table.setMaximumHeight(140)
        self.caption = QLabel(RATES_CAPTION)
        self.caption.setObjectName("hint")
        self.caption.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.alert_label)
        layout.addWidget(self.table)
        layout.addWidget(self.caption)
        # The instances whose gateway circuit is not closed (the feed's gateway event).
        self.circuits: dict[str, CircuitState] = {}
        # Hidden until the hardware inventory names a GPU.
        self.gpu_present = True
        self.set_gpu_present(False)

    def set_gpu_present(self, present: bool) -> None:
        """Show bandwidth use and CPU fallback only where there is a GPU to speak of."""
        self.gpu_present = present
        for column in GPU_COLUMNS:
            self.table.setColumnHidden(column, not present)

    def show_points(self, points: Sequence[InstanceMetrics]) -> None:
        self.table.setRowCount(len(points))
        for row, point in enumerate(points):
            cells = (
                Cell(label_of(point), Level.OK, f"{point.engine}, instance {point.instance}"),
                Cell(f"{point.output_tps:.1f}", Level.OK),
                bandwidth_cell(point),
                fallback_cell(point),
                engine_rate_cell(point),
                circuit_cell(self.circuits.get(point.instance, CircuitState.CLOSED)),
            )
            for column, cell in enumerate(cells):
                self._set_cell(row, column, cell)
            self.cell(row, 0).setData(Qt.ItemDataRole.UserRole, point.instance)
        alert = alert_text(points)
        self.alert_label.setText(alert)
        self.alert_label.setVisible(bool(alert))

    def set_circuits(self, circuits: dict[str, CircuitState]) -> None:
        """The circuits the gateway said last; the rows shown follow at once."""
        self.circuits = dict(circuits)
        for row in range(self.table.rowCount()):
            item = self.table.item(row, 0)
            instance = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
            if isinstance(instance, str):
                state = self.circuits.get(instance, CircuitState.CLOSED)
                self._set_cell(row, CIRCUIT_COLUMN, circuit_cell(state))

    def row_of(self, instance: str) -> int | None:
        """The row that shows this instance, if one does."""
        for row in range(self.table.rowCount()):
            item = self.table.item(row, 0)
            if item is not None and item.data(Qt.ItemDataRole.UserRole) == instance:
                return row
        return None

    def cell(self, row: int, column: int) -> QTableWidgetItem:
        item = self.table.item(row, column)
        assert item is not None
        return item

    def _set_cell(self, row: int, column: int, cell: Cell) -> None:
        item = self.table.item(row, column)
        if item is None:
            item = QTableWidgetItem()
            self.table.setItem(row, column, item)
        item.setText(cell.text)
        item.setToolTip(cell.tooltip)
        colour = LEVEL_COLOURS.get(cell.level)
        # No colour of our own for plain cells: the palette's text colour (dark themes too).
        item.setData(Qt.ItemDataRole.ForegroundRole, QBrush(QColor(colour)) if colour else None)
