"""Step 1: this machine in one line, and the engines that suit it, the recommended one chosen."""

from __future__ import annotations

from PySide6.QtWidgets import QButtonGroup, QLabel, QRadioButton, QVBoxLayout

from roundhouse.api.engines import EngineId
from roundhouse.api.starters import SetupGuide
from roundhouse.base.units import format_bytes
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.first_run.state import GuideState, StepPage
from roundhouse.gui.first_run.words import engine_label


class HardwareStep(StepPage):
    def __init__(self, state: GuideState) -> None:
        super().__init__(
            state,
            "This machine",
            "Roundhouse looked at the processor, memory and GPUs, and ranked the engines that "
            "run models on them. Nothing is installed or downloaded in this step.",
        )
        self._ops = Ops(self)
        self.machine = QLabel()
        self.machine.setObjectName("sectionTitle")
        self.machine.setWordWrap(True)
        self.disk = QLabel()
        self.disk.setObjectName("hint")
        self.engines = QButtonGroup(self)
        self.engines.buttonToggled.connect(lambda *_: self._on_engine_toggled())
        self.reasons: dict[EngineId, QLabel] = {}
        self.engines_title = QLabel("The engines that suit it, best first:")
        self.engines_title.hide()
        self.engines_box = QVBoxLayout()
        self.engines_box.setSpacing(2)
        self.body.addWidget(self.machine)
        self.body.addWidget(self.disk)
        self.body.addSpacing(12)
        self.body.addWidget(self.engines_title)
        self.body.addLayout(self.engines_box)
        self.body.addStretch(1)
        self._call: Call | None = None

    def initializePage(self) -> None:
        if self.state.guide is not None and self._call is None:
            return
        self.say("Looking at this machine…")
        self._call = call = self.state.calls.guide()
        self._ops.run(call, self.show_guide, on_failure=self._on_guide_failed)

    def show_guide(self, guide: SetupGuide) -> None:
        self._call = None
        self.state.guide = guide
        self.say("")
        self.engines_title.show()
        self.machine.setText(guide.hardware)
        if guide.disk_free_bytes is not None:
            self.disk.setText(f"{format_bytes(guide.disk_free_bytes)} free where models go.")
        for button in self.engines.buttons():
            self.engines.removeButton(button)
            button.deleteLater()
        for label in self.reasons.values():
            label.deleteLater()
        self.reasons = {}
        chosen = self.state.engine.engine if self.state.engine else guide.recommended
        for choice in guide.engines:
            button = QRadioButton(engine_label(choice, choice.engine == guide.recommended))
            button.setProperty("engine", choice.engine.value)
            self.engines.addButton(button)
            reason = QLabel(choice.reason)
            reason.setObjectName("hint")
            reason.setWordWrap(True)
            reason.setContentsMargins(24, 0, 0, 6)
            self.reasons[choice.engine] = reason
            self.engines_box.addWidget(button)
            self.engines_box.addWidget(reason)
            button.setChecked(choice.engine == chosen)
        self.completeChanged.emit()

    def choose(self, engine: EngineId) -> None:
        for button in self.engines.buttons():
            if button.property("engine") == engine.value:
                button.setChecked(True)

    def isComplete(self) -> bool:
        return self.state.engine is not None

    def _on_engine_toggled(self) -> None:
        button = self.engines.checkedButton()
        guide = self.state.guide
        if button is None or guide is None:
            return
        engine = EngineId(str(button.property("engine")))
        self.state.engine = next(c for c in guide.engines if c.engine == engine)
        # Another engine: another list of models, and nothing served yet.
        if self.state.option is not None and self.state.option.engine != engine:
            self.state.option = None
            self.state.served = None
        self.completeChanged.emit()

    def _on_guide_failed(self, failure: Failure) -> None:
        self._call = None
        self.say("")
        self.show_problem("Could not look at this machine", failure)
