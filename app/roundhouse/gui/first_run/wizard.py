"""The first-run guide's window: four steps, Skip at each, "Open Roundhouse" at the end.

Finished or skipped (closed, too), it is marked done in the settings, so the app does not
open it again by itself; the Help menu and the tray still do.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QWidget, QWizard

from roundhouse.gui.call import Call
from roundhouse.gui.calls.first_run import FirstRunCalls
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.first_run.chat_step import ChatStep
from roundhouse.gui.first_run.engine_step import EngineStep
from roundhouse.gui.first_run.hardware_step import HardwareStep
from roundhouse.gui.first_run.model_step import ModelStep
from roundhouse.gui.first_run.state import GuideState
from roundhouse.gui.icons import app_icon

SKIP = QWizard.WizardButton.CustomButton1


class FirstRunWizard(QWizard):
    """Emits `done_with(finished)`: True for "Open Roundhouse", False when skipped."""

    done_with = Signal(bool)

    def __init__(
        self,
        bridge: DaemonBridge,
        parent: QWidget | None = None,
        *,
        ctx_size: int | None = None,
        max_tokens: int = 256,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Welcome to Roundhouse")
        self.setWizardStyle(QWizard.WizardStyle.ModernStyle)
        # The app's mark in the header of every step.
        self.setPixmap(QWizard.WizardPixmap.LogoPixmap, app_icon().pixmap(48, 48))
        self.setOption(QWizard.WizardOption.HaveCustomButton1, True)
        self.setOption(QWizard.WizardOption.NoCancelButton, True)
        self.setButtonText(SKIP, "Skip the guide")
        self.button(SKIP).setToolTip("Close the guide; reopen it from Help ▸ First-run guide…")
        self.setButtonText(QWizard.WizardButton.FinishButton, "Open Roundhouse")
        self.customButtonClicked.connect(lambda _: self.skip())
        self.state = GuideState(FirstRunCalls(bridge), ctx_size=ctx_size, max_tokens=max_tokens)
        self.hardware = HardwareStep(self.state)
        self.engine = EngineStep(self.state, bridge)
        self.model = ModelStep(self.state)
        self.chat = ChatStep(self.state)
        for page in (self.hardware, self.engine, self.model, self.chat):
            self.addPage(page)
        self.finish_call: Call | None = None
        self.resize(760, 600)

    def skip(self) -> None:
        self._leave(finished=False)

    def accept(self) -> None:
        self._leave(finished=True)

    def reject(self) -> None:
        self._leave(finished=False)

    def closeEvent(self, event: QCloseEvent) -> None:
        event.accept()
        self._leave(finished=False)

    def _leave(self, *, finished: bool) -> None:
        if self.finish_call is not None:
            return
        self.model.panel.stop_following()
        served = self.state.served
        self.finish_call = self.state.calls.finish(served.model if finished and served else None)
        self.hide()
        self.done_with.emit(finished)
