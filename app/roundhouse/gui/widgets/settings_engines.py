"""The Engines section of the Settings page: the Pythons to look in, what a starting daemon
does with engines an earlier one left running, and how long a model may take to load."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QSpinBox, QVBoxLayout, QWidget

from roundhouse.api.settings import EngineSettings, LeftoverAction, Settings
from roundhouse.gui.widgets.settings_path_list import PathListEditor, hint, schema_bounds

LEFTOVER_WORDS = {
    LeftoverAction.ADOPT: (
        "Keep them serving",
        "Engines a crashed or killed daemon left running keep serving, listed as adopted: no "
        "model has to load again.",
    ),
    LeftoverAction.REAP: (
        "Stop them",
        "Engines a crashed or killed daemon left running are stopped when the daemon starts: "
        "nothing runs that this daemon did not start.",
    ),
}


class EngineSettingsSection(QGroupBox):
    """`apply()` puts the form into settings; `changed` says the form moved."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Engines", parent)
        self.pythons = PathListEditor(
            "/path/to/python (on the daemon's machine)", "A Python interpreter", folders=False
        )
        self.pythons.changed.connect(self._on_changed)

        self.leftover = QComboBox()
        for action, (text, _) in LEFTOVER_WORDS.items():
            self.leftover.addItem(text, action.value)
        self.leftover.currentIndexChanged.connect(self._on_changed)
        self.leftover_help = hint()

        low, high = schema_bounds(EngineSettings, "ready_timeout_s")
        self.ready_timeout = QSpinBox()
        self.ready_timeout.setRange(low, high)
        self.ready_timeout.setSuffix(" s")
        self.ready_timeout.setSingleStep(30)
        self.ready_timeout.valueChanged.connect(self._on_changed)

        form = QFormLayout(self)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        left = Qt.AlignmentFlag.AlignLeft
        pythons_box = QVBoxLayout()
        pythons_box.addWidget(self.pythons)
        pythons_box.addWidget(
            hint(
                "Roundhouse looks in these Pythons for mlx-lm, vLLM and SGLang, besides the "
                "environments it makes itself."
            )
        )
        form.addRow("Pythons:", pythons_box)
        leftover_box = QVBoxLayout()
        leftover_box.addWidget(self.leftover, 0, left)
        leftover_box.addWidget(self.leftover_help)
        form.addRow("Engines left running:", leftover_box)
        timeout_box = QVBoxLayout()
        timeout_box.addWidget(self.ready_timeout, 0, left)
        timeout_box.addWidget(
            hint(
                "How long an engine may take to load its model before it is given up. Big "
                "models on slow disks need minutes."
            )
        )
        form.addRow("Loading may take:", timeout_box)
        self._show_leftover_help()

    def show_settings(self, settings: Settings) -> None:
        engines = settings.engines
        self.pythons.set_paths(engines.python_paths)
        index = self.leftover.findData(engines.on_leftover.value)
        self.leftover.setCurrentIndex(max(0, index))
        self.ready_timeout.setValue(round(engines.ready_timeout_s))

    def apply(self, settings: Settings) -> Settings:
        """`settings` with the engine part as the form has it, unchecked: the daemon checks."""
        engines = EngineSettings.model_construct(
            python_paths=self.pythons.paths(),
            on_leftover=self.leftover_action(),
            ready_timeout_s=float(self.ready_timeout.value()),
        )
        return settings.model_copy(update={"engines": engines})

    def leftover_action(self) -> LeftoverAction:
        # Qt hands a StrEnum back as a plain str.
        return LeftoverAction(self.leftover.currentData() or LeftoverAction.ADOPT)

    def _show_leftover_help(self) -> None:
        self.leftover_help.setText(LEFTOVER_WORDS[self.leftover_action()][1])

    def _on_changed(self, *_: Any) -> None:
        self._show_leftover_help()
        self.changed.emit()
