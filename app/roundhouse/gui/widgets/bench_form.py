"""What to benchmark: the model, the workload's size and pace, the convention and a label."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from roundhouse.api.bench import BenchRequest, Convention
from roundhouse.gui.widgets.chat_settings import ModelPicker

# The pace: requests arrive at a rate, or a fixed number run at once.
PACE_CONCURRENCY = "Max concurrency"
PACE_RATE = "Request rate (req/s)"


def _spin(low: int, high: int, value: int, tip: str) -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(low, high)
    spin.setValue(value)
    spin.setToolTip(tip)
    return spin


class BenchForm(QGroupBox):
    """`request()` builds the BenchRequest from what is on screen (the daemon checks it)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Benchmark", parent)
        self.picker = ModelPicker()
        self.prompts = _spin(1, 100_000, 20, "How many requests the benchmark sends")
        self.pace = QComboBox()
        self.pace.addItems([PACE_CONCURRENCY, PACE_RATE])
        self.pace.setToolTip("Keep a number of requests in flight, or send them at a rate")
        self.concurrency = _spin(1, 10_000, 4, "Requests in flight at most")
        self.rate = QDoubleSpinBox()
        self.rate.setRange(0.1, 10_000.0)
        self.rate.setValue(4.0)
        self.rate.setToolTip("Requests per second, arriving at random (Poisson)")
        self.input_len = _spin(1, 1_000_000, 128, "Prompt length in tokens")
        self.output_len = _spin(1, 1_000_000, 64, "Tokens generated per request")
        self.convention = QComboBox()
        for convention in Convention:
            self.convention.addItem(convention.value, convention)
        self.convention.setToolTip("Whose metric definitions to follow (see docs/bench.md)")
        self.label = QLineEdit()
        self.label.setPlaceholderText("optional: names the run in lists and comparisons")
        self.label.setMaxLength(200)
        form = QFormLayout(self)
        form.addRow("Model", self.picker)
        form.addRow("Prompts", self.prompts)
        form.addRow("Pace", self.pace)
        form.addRow(PACE_CONCURRENCY, self.concurrency)
        form.addRow(PACE_RATE, self.rate)
        form.addRow("Input length", self.input_len)
        form.addRow("Output length", self.output_len)
        form.addRow("Convention", self.convention)
        form.addRow("Label", self.label)
        self._form = form
        self.pace.currentTextChanged.connect(self._on_pace_changed)
        self._on_pace_changed(self.pace.currentText())

    def _on_pace_changed(self, pace: str) -> None:
        self._form.setRowVisible(self.concurrency, pace == PACE_CONCURRENCY)
        self._form.setRowVisible(self.rate, pace == PACE_RATE)

    def request(self, model: str | None = None) -> BenchRequest:
        """Raises pydantic's ValidationError when no model is picked (or given)."""
        by_rate = self.pace.currentText() == PACE_RATE
        return BenchRequest(
            model=self.picker.current_model() if model is None else model,
            num_prompts=self.prompts.value(),
            request_rate=self.rate.value() if by_rate else None,
            max_concurrency=None if by_rate else self.concurrency.value(),
            input_len=self.input_len.value(),
            output_len=self.output_len.value(),
            convention=Convention(self.convention.currentData()),
            label=self.label.text().strip() or None,
        )
