"""A conversation's settings: the model (what the gateway offers), and, folded, the system
prompt with its presets (saved, named prompts: pick one, save the prompt as one, delete one)
and the sampling (temperature, top_p, max tokens; each may be left to the engine)."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from roundhouse.api.chat import Preset, SamplingParams
from roundhouse.api.gateway import GatewayModel, GatewayModelList

ENGINE_DEFAULT = "engine default"
NO_PRESET = "No preset"
NOT_AVAILABLE = "not available: pick one from the list"
# Typing is saved once it pauses this long.
SAVE_AFTER_MS = 700


class ModelPicker(QComboBox):
    """The models the gateway can serve; a name it does not list may be typed in."""

    picked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setEditable(True)
        self.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.setMinimumContentsLength(28)
        self.setToolTip("The model that answers: one the gateway serves or can start")
        line = self.lineEdit()
        assert line is not None, "an editable combo box has a line edit"
        line.setPlaceholderText("No model serving: start one on the Engines page")
        line.editingFinished.connect(self._on_line_edit_editing_finished)
        self.models: dict[str, GatewayModel] = {}
        self.activated.connect(lambda _: self.picked.emit(self.current_model()))
        self._last = ""

    def set_models(self, listed: GatewayModelList, current: str | None) -> None:
        """List them; select `current` (kept even when not listed), else the active one."""
        self.blockSignals(True)
        self.clear()
        self.models = {m.id: m for m in listed.models}
        for model in listed.models:
            self.addItem(model.id)
            self.setItemData(
                self.count() - 1,
                f"{model.engine.value} · {model.state.value}",
                Qt.ItemDataRole.ToolTipRole,
            )
        chosen = current or listed.active_model or (listed.models[0].id if listed.models else "")
        self.set_model(chosen)
        self.blockSignals(False)

    def set_model(self, model: str | None) -> None:
        index = self.findText(model or "")
        if index >= 0:
            self.setCurrentIndex(index)
        else:
            self.setCurrentIndex(-1)
            self.setEditText(model or "")
        self._last = self.current_model()

    def current_model(self) -> str:
        return self.currentText().strip()

    def engine(self) -> str | None:
        known = self.models.get(self.current_model())
        return known.engine.value if known is not None else None

    def describe(self) -> str:
        known = self.models.get(self.current_model())
        if known is None:
            # Typed, not listed: nothing running or startable answers to this name.
            return NOT_AVAILABLE if self.current_model() else ""
        return f"{known.engine.value} · {known.state.value}"

    def _on_line_edit_editing_finished(self) -> None:
        if self.current_model() != self._last:
            self._last = self.current_model()
            self.picked.emit(self._last)


def _optional_float(box: QDoubleSpinBox) -> float | None:
    return None if box.value() == box.minimum() else round(box.value(), 2)


class ChatSettingsPanel(QWidget):
    """Emits `changed` once the user pauses; `values()` is what to save and send."""

    changed = Signal()
    preset_save_requested = Signal(str, str)  # name, text
    preset_delete_requested = Signal(str)  # name

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.presets: dict[str, str] = {}
        self._preset: str | None = None
        self.preset_picker = QComboBox()
        self.preset_picker.setToolTip("A saved system prompt: picking one fills the prompt in")
        self.preset_picker.setMinimumContentsLength(16)
        self.preset_picker.addItem(NO_PRESET)
        self.preset_picker.activated.connect(self._on_preset_picker_activated)
        self.save_preset_button = QPushButton("Save as preset…")
        self.save_preset_button.setToolTip("Save this system prompt under a name")
        self.save_preset_button.clicked.connect(self._on_save_preset_clicked)
        self.delete_preset_button = QPushButton("Delete preset")
        self.delete_preset_button.setToolTip(
            "Delete the preset picked; chats that use it keep its text"
        )
        self.delete_preset_button.clicked.connect(self._on_delete_preset_clicked)
        self.delete_preset_button.setEnabled(False)
        self.system_prompt = QPlainTextEdit()
        self.system_prompt.setPlaceholderText("Optional: how the model should answer")
        self.system_prompt.setFixedHeight(self.fontMetrics().lineSpacing() * 4 + 14)
        self.temperature = QDoubleSpinBox()
        # The minimum, one step below 0, means "leave it to the engine": 0 is greedy sampling.
        self.temperature.setRange(-0.1, 2.0)
        self.temperature.setSingleStep(0.1)
        self.temperature.setDecimals(2)
        self.top_p = QDoubleSpinBox()
        self.top_p.setRange(0.0, 1.0)
        self.top_p.setSingleStep(0.05)
        self.top_p.setDecimals(2)
        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(0, 1_000_000)
        self.max_tokens.setSingleStep(256)
        for box in (self.temperature, self.top_p, self.max_tokens):
            box.setSpecialValueText(ENGINE_DEFAULT)
        self.temperature.setValue(self.temperature.minimum())
        self.top_p.setValue(self.top_p.minimum())
        self.max_tokens.setValue(self.max_tokens.minimum())
        sampling = QHBoxLayout()
        for label, box in (
            ("Temperature", self.temperature),
            ("top_p", self.top_p),
            ("Max tokens", self.max_tokens),
        ):
            sampling.addWidget(QLabel(label))
            sampling.addWidget(box)
        sampling.addStretch(1)
        presets = QHBoxLayout()
        presets.addWidget(self.preset_picker)
        presets.addWidget(self.save_preset_button)
        presets.addWidget(self.delete_preset_button)
        presets.addStretch(1)
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Preset", presets)
        form.addRow("System prompt", self.system_prompt)
        form.addRow("Sampling", sampling)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SAVE_AFTER_MS)
        self._timer.timeout.connect(self.changed)
        self.system_prompt.textChanged.connect(self._timer.start)
        self.system_prompt.textChanged.connect(self._on_system_prompt_text_changed)
        self.temperature.valueChanged.connect(self._timer.start)
        self.top_p.valueChanged.connect(self._timer.start)
        self.max_tokens.valueChanged.connect(self._timer.start)

    def values(self) -> tuple[str, SamplingParams]:
        params = SamplingParams(
            temperature=_optional_float(self.temperature),
            top_p=_optional_float(self.top_p),
            max_tokens=self.max_tokens.value() or None,
        )
        return self.system_prompt.toPlainText(), params

    def preset(self) -> str | None:
        """The name of the preset the system prompt is, None once it was changed by hand."""
        return self._preset

    def set_presets(self, presets: list[Preset]) -> None:
        """The presets to pick from (the daemon's, by name), keeping the one picked."""
        self.presets = {p.name: p.text for p in presets}
        self.preset_picker.blockSignals(True)
        self.preset_picker.clear()
        self.preset_picker.addItem(NO_PRESET)
        for preset in presets:
            self.preset_picker.addItem(preset.name)
        self.preset_picker.blockSignals(False)
        self._show_preset()

    def pick_preset(self, name: str | None) -> None:
        """Use a preset: its text becomes the system prompt (saved like a change)."""
        if name is None:
            self._preset = None
        elif name in self.presets:
            self._preset = name
            if self.system_prompt.toPlainText() != self.presets[name]:
                self.system_prompt.setPlainText(self.presets[name])
            self._timer.start()
        self._show_preset()

    def save_preset_as(self, name: str) -> None:
        """Ask for the system prompt shown to be saved as the preset `name`."""
        name = " ".join(name.split())
        if name:
            self._preset = name
            self.preset_save_requested.emit(name, self.system_prompt.toPlainText())
            self._timer.start()

    def _on_preset_picker_activated(self, index: int) -> None:
        self.pick_preset(None if index <= 0 else self.preset_picker.itemText(index))

    def _on_save_preset_clicked(self) -> None:
        name, ok = QInputDialog.getText(
            self, "Save as preset", "Name of the preset:", text=self._preset or ""
        )
        if ok:
            self.save_preset_as(name)

    def _on_delete_preset_clicked(self) -> None:
        if self._preset is not None:
            self.preset_delete_requested.emit(self._preset)

    def _on_system_prompt_text_changed(self) -> None:
        # Changed by hand: no longer the preset (the conversation keeps the text it has).
        known = self.presets.get(self._preset) if self._preset is not None else None
        if known is not None and self.system_prompt.toPlainText() != known:
            self._preset = None
            self._show_preset()

    def _show_preset(self) -> None:
        index = self.preset_picker.findText(self._preset) if self._preset else 0
        self.preset_picker.blockSignals(True)
        self.preset_picker.setCurrentIndex(max(index, 0))
        self.preset_picker.blockSignals(False)
        self.delete_preset_button.setEnabled(index > 0)

    def set_values(
        self, system_prompt: str, params: SamplingParams, preset: str | None = None
    ) -> None:
        """Show a conversation's settings; not a change to save."""
        widgets = (self.system_prompt, self.temperature, self.top_p, self.max_tokens)
        for widget in widgets:
            widget.blockSignals(True)
        self._preset = preset
        self._show_preset()
        self.system_prompt.setPlainText(system_prompt)
        self.temperature.setValue(
            params.temperature if params.temperature is not None else self.temperature.minimum()
        )
        self.top_p.setValue(params.top_p if params.top_p is not None else 0.0)
        self.max_tokens.setValue(params.max_tokens or 0)
        for widget in widgets:
            widget.blockSignals(False)
        self._timer.stop()

    def taken(self) -> None:
        """The values went with a turn, which keeps them on the conversation: nothing is
        left to save."""
        self._timer.stop()
