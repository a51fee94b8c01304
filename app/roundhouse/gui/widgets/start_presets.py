"""The start dialog's presets: options saved per engine and model; listed, saved, deleted."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QComboBox, QInputDialog, QPushButton, QWidget

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import Preset, PresetList
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge

NO_PRESET = "— none —"


class PresetForm(Protocol):
    """What the presets read from and write to: the start dialog."""

    def engine(self) -> EngineId | None: ...

    def model(self) -> str: ...

    def options(self) -> InstanceOptions: ...

    def set_options(self, options: InstanceOptions) -> None: ...

    def show_info(self, text: str) -> None: ...

    def show_failure(self, failure: Failure) -> None: ...


class StartPresets(QObject):
    """Owns `preset_combo` and its two buttons; the list is asked for afresh, a moment after
    the engine or the model last changed."""

    def __init__(self, bridge: DaemonBridge, form: PresetForm, parent: QWidget) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self._form = form
        self._window = parent
        self._presets_key: tuple[EngineId, str] | None = None
        self._choose_when_loaded: str | None = None
        self.name_dialog: QInputDialog | None = None
        self.preset_combo = QComboBox()
        self.preset_combo.setMinimumContentsLength(16)
        self.preset_combo.setToolTip("Options saved for this model on this engine")
        self.preset_combo.activated.connect(self._on_preset_combo_activated)
        self.save_preset_button = QPushButton("Save as preset…")
        self.save_preset_button.setToolTip("Save these options for this model under a name")
        self.save_preset_button.clicked.connect(self._on_save_preset_button_clicked)
        self.delete_preset_button = QPushButton("Delete")
        self.delete_preset_button.setToolTip("Delete the chosen preset")
        self.delete_preset_button.clicked.connect(self._on_delete_preset_button_clicked)
        self._presets_timer = QTimer(self)
        self._presets_timer.setSingleShot(True)
        self._presets_timer.setInterval(300)
        self._presets_timer.timeout.connect(self.load_presets)

    def reload_soon(self) -> None:
        """The engine or the model changed: none until the daemon says, asked in a moment."""
        self._clear_presets()
        self._presets_timer.start()

    def load_presets(self) -> None:
        """Ask for the presets of this engine and model; the chooser fills when they come."""
        engine, model = self._form.engine(), self._form.model()
        self._clear_presets()
        if engine is None or not model:
            return
        self._presets_key = (engine, model)
        # The latest answer wins: one for an engine or model since changed is dropped.
        self._ops.run(
            self._bridge.presets(engine.value, model),
            self._on_presets_loaded,
            on_failure=self._on_presets_failed,
            latest="presets",
        )

    def _clear_presets(self) -> None:
        """No presets until the daemon has said which this engine and model have."""
        self._presets_key = None
        self._ops.forget("presets")
        self.preset_combo.clear()
        self.preset_combo.addItem(NO_PRESET, None)
        self.preset_combo.setEnabled(False)
        self.delete_preset_button.setEnabled(False)
        self.save_preset_button.setEnabled(
            self._form.engine() is not None and bool(self._form.model())
        )

    def preset_names(self) -> list[str]:
        return [self.preset_combo.itemText(i) for i in range(1, self.preset_combo.count())]

    def choose_preset(self, name: str) -> None:
        index = self.preset_combo.findText(name)
        if index < 1:
            raise KeyError(name)
        self.preset_combo.setCurrentIndex(index)
        self._on_preset_combo_activated(index)

    def save_preset_as(self, name: str) -> None:
        engine, model, name = self._form.engine(), self._form.model(), name.strip()
        if engine is None or not model:
            return
        if not name or len(name) > 80:
            self._form.show_failure(Failure("Not saved", "A preset's name has 1 to 80 characters."))
            return
        options = self._form.options()
        preset = Preset(engine=engine, model=model, name=name, options=options)
        call = self._bridge.save_preset(preset)
        self._ops.run(call, self._on_preset_saved, on_failure=self._form.show_failure)

    def _on_presets_loaded(self, found: PresetList) -> None:
        for preset in found.presets:
            self.preset_combo.addItem(preset.name, preset)
        self.preset_combo.setEnabled(bool(found.presets))
        chosen, self._choose_when_loaded = self._choose_when_loaded, None
        if chosen is not None and (index := self.preset_combo.findText(chosen)) > 0:
            self.preset_combo.setCurrentIndex(index)
        self._update_delete_button()

    def _on_presets_failed(self, failure: Failure) -> None:
        self.preset_combo.setToolTip(f"Presets were not loaded: {failure}")

    def _on_preset_combo_activated(self, index: int) -> None:
        preset = self.preset_combo.itemData(index)
        self._update_delete_button()
        if isinstance(preset, Preset):
            self._form.set_options(preset.options)
            self._form.show_info(f"Preset “{preset.name}” filled in the parameters.")

    def _on_preset_saved(self, saved: Preset) -> None:
        self._form.show_info(f"Saved the preset “{saved.name}” for this model.")
        # Listed afresh (the daemon's order), with the saved one chosen.
        self._presets_timer.stop()
        self._choose_when_loaded = saved.name
        self.load_presets()

    def _on_save_preset_button_clicked(self) -> None:
        box = QInputDialog(self._window)
        box.setWindowTitle("Save as preset")
        box.setLabelText(f"Name of the preset for {Path(self._form.model()).name}:")
        current = self.preset_combo.currentData()
        box.setTextValue(current.name if isinstance(current, Preset) else "default")
        box.textValueSelected.connect(self.save_preset_as)
        self.name_dialog = box
        # open(), not exec(): a nested event loop would stall qasync's tasks.
        box.open()

    def _on_delete_preset_button_clicked(self) -> None:
        preset = self.preset_combo.currentData()
        if not isinstance(preset, Preset):
            return
        self._form.show_info(f"Deleting the preset “{preset.name}”…")
        call = self._bridge.delete_preset(preset.engine.value, preset.model, preset.name)
        self._ops.run(call, self._on_preset_deleted, on_failure=self._form.show_failure)

    def _on_preset_deleted(self, _result: object) -> None:
        self._form.show_info("Deleted the preset.")
        self.load_presets()

    def _update_delete_button(self) -> None:
        self.delete_preset_button.setEnabled(isinstance(self.preset_combo.currentData(), Preset))
