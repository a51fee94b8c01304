"""The start dialog's Capabilities group: experts in RAM, drafts, reasoning, LoRA (ADR 48).

Each control says in a plain sentence when to use it. The group also holds the flash
attention, KV cache and draft rows that StartParams owns; the fit line's proposal of an
--n-cpu-moe N shows here with a "Use N" button.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.engines import EngineId, InstanceOptions, LoraAdapter
from roundhouse.api.fit import AdviceKind, ModelFit
from roundhouse.api.library import LibraryList, LibraryModel
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.widgets.start_capability_words import with_hint
from roundhouse.gui.widgets.start_params import form_row, optional_spin, set_spin, spin_value

MOE_CHOICES = (("none", None), ("every layer (--cpu-moe)", "all"), ("the first N layers", 0))
THINKING_CHOICES = (("the model's default", None), ("on", True), ("off", False))
EFFORTS = ("", "minimal", "low", "medium", "high")
DRAFT_LAYERS = ("", "auto", "all")


def parse_lora(text: str) -> tuple[LoraAdapter, ...]:
    """'a.gguf; b.gguf@0.5' as adapters; a tail after @ that is no number is part of the path."""
    adapters: list[LoraAdapter] = []
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        path, scale = part, 1.0
        head, sep, tail = part.rpartition("@")
        if sep:
            with contextlib.suppress(ValueError):
                scale, path = float(tail), head.strip()
        adapters.append(LoraAdapter(path=path, scale=scale))
    return tuple(adapters)


def lora_text(adapters: tuple[LoraAdapter, ...]) -> str:
    return "; ".join(a.path if a.scale == 1.0 else f"{a.path}@{a.scale:g}" for a in adapters)


class StartCapabilities(QObject):
    """Builds `box` (the group) and its new controls; StartParams places the rows."""

    use_all_layers = Signal()  # "Use N" asks for every layer on the GPU as well

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._calls: ModelsCalls | None = None
        self._library: list[LibraryModel] = []
        self.file_dialog: QFileDialog | None = None
        self.form = QFormLayout()
        self.form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.box = QGroupBox("Capabilities")
        self.box.setLayout(self.form)

        self.moe_choice = QComboBox()
        for text, value in MOE_CHOICES:
            self.moe_choice.addItem(text, value)
        self.moe_number = QSpinBox()
        self.moe_number.setRange(0, 999)
        self.moe_number.hide()
        self.moe_choice.currentIndexChanged.connect(self._on_moe_choice_changed)
        self.moe_proposal = QLabel()
        self.moe_proposal.setWordWrap(True)
        self.moe_proposal.hide()
        self.use_moe_button = QPushButton("Use")
        self.use_moe_button.hide()
        self.use_moe_button.clicked.connect(self._on_use_moe_clicked)
        self._proposed: int | None = None
        moe = QWidget()
        moe_layout = QVBoxLayout(moe)
        moe_layout.setContentsMargins(0, 0, 0, 0)
        moe_layout.addWidget(form_row(self.moe_choice, self.moe_number))
        moe_layout.addWidget(form_row(self.moe_proposal, self.use_moe_button))

        self.draft_pick = QComboBox()
        self.draft_pick.setToolTip("Smaller models of the library for this engine")
        self.draft_pick.addItem("From the library…", None)
        self.draft_min = optional_spin("engine default", 0, 64, "The fewest tokens drafted")
        self.draft_gpu_layers = QComboBox()
        self.draft_gpu_layers.setEditable(True)
        self.draft_gpu_layers.addItems(list(DRAFT_LAYERS))
        line = self.draft_gpu_layers.lineEdit()
        if line is not None:
            line.setPlaceholderText("engine default")
        self.thinking = QComboBox()
        for text, value in THINKING_CHOICES:
            self.thinking.addItem(text, value)
        self.reasoning_budget = optional_spin(
            "engine default", -1, 1 << 20, "Tokens of thinking at most; -1: no limit, 0: off"
        )
        self.reasoning_budget.setSingleStep(256)
        self.reasoning_effort = QComboBox()
        self.reasoning_effort.addItems(list(EFFORTS))
        self.lora = QLineEdit()
        self.lora.setClearButtonEnabled(True)
        self.lora.setPlaceholderText("none")
        self.lora_browse = QPushButton("Add…")
        self.lora_browse.clicked.connect(self._on_lora_browse_clicked)

        # The rows StartParams registers, in order (after its own flash and KV rows).
        self.rows: list[tuple[str, str, QWidget]] = [
            ("n_cpu_moe", "Experts in RAM:", with_hint(moe, "n_cpu_moe")),
            ("draft_min", "Least draft tokens:", with_hint(self.draft_min, "draft_min")),
            (
                "draft_gpu_layers",
                "Draft GPU layers:",
                with_hint(self.draft_gpu_layers, "draft_gpu_layers"),
            ),
            ("thinking", "Thinking:", with_hint(self.thinking, "thinking")),
            (
                "reasoning_budget",
                "Thinking budget:",
                with_hint(self.reasoning_budget, "reasoning_budget"),
            ),
            (
                "reasoning_effort",
                "Reasoning effort:",
                with_hint(self.reasoning_effort, "reasoning_effort"),
            ),
            ("lora", "LoRA adapters:", with_hint(form_row(self.lora, self.lora_browse), "lora")),
        ]
        self._draft_line: QLineEdit | None = None
        self._engine: EngineId | None = None

    # -- StartParams' side ------------------------------------------------------------

    def attach_draft(self, line: QLineEdit) -> QWidget:
        """The draft model's line with the library picker beside it, and its sentence."""
        self._draft_line = line
        self.draft_pick.activated.connect(self._on_draft_picked)
        return with_hint(form_row(line, self.draft_pick), "draft_model")

    def values(self) -> dict[str, object]:
        return {
            "n_cpu_moe": self._moe(),
            "draft_min": spin_value(self.draft_min),
            "draft_gpu_layers": _layers(self.draft_gpu_layers.currentText()),
            "thinking": self.thinking.currentData(),
            "reasoning_budget": _budget(self.reasoning_budget),
            "reasoning_effort": self.reasoning_effort.currentText() or None,
            "lora": _lora_or_none(self.lora.text()),
        }

    def set_options(self, options: InstanceOptions) -> None:
        moe = options.n_cpu_moe
        if isinstance(moe, int):
            self.moe_choice.setCurrentIndex(self.moe_choice.findText("the first N layers"))
            self.moe_number.setValue(moe)
        else:
            self.moe_choice.setCurrentIndex(max(0, self.moe_choice.findData(moe)))
        set_spin(self.draft_min, options.draft_min)
        layers = options.draft_gpu_layers
        self.draft_gpu_layers.setCurrentText("" if layers is None else str(layers))
        self.thinking.setCurrentIndex(max(0, self.thinking.findData(options.thinking)))
        set_spin(self.reasoning_budget, options.reasoning_budget)
        self.reasoning_effort.setCurrentText(options.reasoning_effort or "")
        self.lora.setText(lora_text(options.lora))

    def connect_changes(self, slot: Callable[[], object]) -> None:
        for spin in (self.moe_number, self.draft_min, self.reasoning_budget):
            spin.valueChanged.connect(slot)
        for combo in (self.moe_choice, self.thinking):
            combo.currentIndexChanged.connect(slot)
        for editable in (self.draft_gpu_layers, self.reasoning_effort):
            editable.currentTextChanged.connect(slot)
        self.lora.textChanged.connect(slot)

    # -- the library and the fit ------------------------------------------------------

    def attach(self, bridge: DaemonBridge) -> None:
        """Ask for the library, to offer its smaller models as drafts."""
        self._calls = ModelsCalls(bridge)
        self._ops.run(self._calls.library(), self._on_library, on_failure=self._on_no_library)

    def offer_drafts_for(self, engine: EngineId | None, model: str) -> None:
        """List the library's models this engine runs, smaller than `model`, same family
        (architecture) first."""
        self._engine = engine
        self.draft_pick.clear()
        self.draft_pick.addItem("From the library…", None)
        chosen = next((m for m in self._library if m.path == model), None)
        fits = [
            m
            for m in self._library
            if engine in m.engines
            and m.path
            and m.path != model
            and (chosen is None or m.size_bytes < chosen.size_bytes)
        ]
        family = chosen.architecture if chosen is not None else None
        fits.sort(key=lambda m: (m.architecture != family, m.size_bytes))
        for m in fits[:30]:
            self.draft_pick.addItem(f"{m.name} ({m.size_bytes / 2**30:.1f} GiB)", m.path)
        self.draft_pick.setEnabled(bool(fits))

    def show_fit(self, fit: ModelFit | None) -> None:
        """The estimate's proposed --n-cpu-moe, as a sentence and a "Use N" button."""
        advice = None
        if fit is not None:
            advice = next((a for a in fit.report.advice if a.kind == AdviceKind.CPU_MOE), None)
        if advice is None or not isinstance(advice.value, int):
            self._proposed = None
            self.moe_proposal.hide()
            self.use_moe_button.hide()
            return
        self._proposed = advice.value
        self.moe_proposal.setText(advice.text)
        self.moe_proposal.show()
        self.use_moe_button.setText(f"Use {advice.value}")
        self.use_moe_button.setVisible(advice.value > 0)

    @property
    def proposed_moe(self) -> int | None:
        return self._proposed

    # -- reacting -----------------------------------------------------------------------

    def _on_library(self, listing: LibraryList) -> None:
        self._library = listing.models
        model = self._draft_line.text() if self._draft_line is not None else ""
        self.offer_drafts_for(self._engine, model)

    def _on_no_library(self, _failure: Failure) -> None:
        self.draft_pick.setEnabled(False)

    def _on_draft_picked(self, index: int) -> None:
        path = self.draft_pick.itemData(index)
        if isinstance(path, str) and self._draft_line is not None:
            self._draft_line.setText(path)

    def _on_moe_choice_changed(self) -> None:
        self.moe_number.setVisible(self.moe_choice.currentText() == "the first N layers")

    def _on_use_moe_clicked(self) -> None:
        if self._proposed is None:
            return
        self.moe_choice.setCurrentIndex(self.moe_choice.findText("the first N layers"))
        self.moe_number.setValue(self._proposed)
        self.use_all_layers.emit()

    def _on_lora_browse_clicked(self) -> None:
        box = QFileDialog(self.box, "Choose a LoRA adapter")
        box.setFileMode(QFileDialog.FileMode.ExistingFile)
        box.setNameFilters(["LoRA adapters (*.gguf *.safetensors)", "All files (*)"])
        box.fileSelected.connect(self._add_lora)
        self.file_dialog = box
        box.open()

    def _add_lora(self, path: str) -> None:
        text = self.lora.text().strip()
        self.lora.setText(f"{text}; {path}" if text else path)

    def _moe(self) -> int | str | None:
        if self.moe_choice.currentText() == "the first N layers":
            return self.moe_number.value()
        value = self.moe_choice.currentData()
        return value if isinstance(value, str) else None


def _layers(text: str) -> int | str | None:
    text = text.strip()
    if not text:
        return None
    return int(text) if text.isdigit() else text


def _budget(spin: QSpinBox) -> int | None:
    return None if spin.value() == spin.minimum() else spin.value()


def _lora_or_none(text: str) -> tuple[LoraAdapter, ...]:
    try:
        return parse_lora(text)
    except ValueError:
        # A half-typed scale: the checks say so once the options are read.
        return ()
