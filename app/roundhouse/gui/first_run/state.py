"""What the guide's steps share: the calls, the choices made so far, and a page's frame."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWizardPage

from roundhouse.api.starters import EngineChoice, ServedStarter, SetupGuide, StarterOption
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.first_run import FirstRunCalls


@dataclass
class GuideState:
    """The choices made so far; later steps read what earlier ones chose."""

    calls: FirstRunCalls
    # llama.cpp's context for the first chat (None: the daemon's 4096); tests keep it small.
    ctx_size: int | None = None
    max_tokens: int = 256
    guide: SetupGuide | None = None
    engine: EngineChoice | None = None
    option: StarterOption | None = None
    served: ServedStarter | None = None


class StepPage(QWizardPage):
    """A step: its title and words, a line saying what happens now, and a problem with Retry."""

    def __init__(self, state: GuideState, title: str, subtitle: str) -> None:
        super().__init__()
        self.state = state
        self.setTitle(title)
        self.setSubTitle(subtitle)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.problem = QLabel()
        self.problem.setObjectName("dialogError")
        self.problem.setWordWrap(True)
        self.problem.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.retry_button = QPushButton("Try again")
        self.retry_button.clicked.connect(self.retry)
        problem_row = QHBoxLayout()
        problem_row.addWidget(self.problem, 1)
        problem_row.addWidget(self.retry_button, 0, Qt.AlignmentFlag.AlignTop)
        self.body = QVBoxLayout()
        layout = QVBoxLayout(self)
        layout.addWidget(self.status)
        layout.addLayout(self.body, 1)
        layout.addLayout(problem_row)
        self.clear_problem()

    def say(self, text: str) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))

    def show_problem(self, what: str, failure: Failure | str) -> None:
        self.problem.setText(f"{what}: {failure}")
        self.problem.show()
        self.retry_button.show()
        self.completeChanged.emit()

    def clear_problem(self) -> None:
        self.problem.hide()
        self.retry_button.hide()

    def retry(self) -> None:
        """Do the step's work again (each step says what that is)."""
        self.clear_problem()
        self.initializePage()
