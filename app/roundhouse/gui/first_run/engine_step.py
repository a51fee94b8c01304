"""Step 2: the engine, ready to run: already installed, installed now, or Ollama attached."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout

from roundhouse.api.engines import EngineId
from roundhouse.api.installs import InstallJob, InstallRequest, JobState
from roundhouse.api.instances import InstanceInfo
from roundhouse.api.starters import EngineSetupState, SetupGuide
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.first_run.state import GuideState, StepPage
from roundhouse.gui.first_run.words import engine_cost
from roundhouse.gui.widgets.install_view import InstallView


class EngineStep(StepPage):
    def __init__(self, state: GuideState, bridge: DaemonBridge) -> None:
        super().__init__(
            state,
            "The engine",
            "The engine is the program that runs the model. This step installs it when it is "
            "missing, and says first what that costs.",
        )
        self._ops = Ops(self)
        self._bridge = bridge
        self.detail = QLabel()
        self.detail.setWordWrap(True)
        self.cost = QLabel()
        self.cost.setObjectName("hint")
        self.cost.setWordWrap(True)
        self.link = QLabel()
        self.link.setOpenExternalLinks(True)
        self.link.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.install_button = QPushButton("Install")
        self.install_button.clicked.connect(self.install)
        self.check_button = QPushButton("Check again")
        self.check_button.setToolTip("Look for the engine again, after installing it yourself")
        self.check_button.clicked.connect(self.check_again)
        buttons = QHBoxLayout()
        buttons.addWidget(self.install_button)
        buttons.addWidget(self.check_button)
        buttons.addStretch(1)
        self.body.addWidget(self.detail)
        self.body.addWidget(self.cost)
        self.body.addWidget(self.link)
        self.body.addLayout(buttons)
        self.install_box = QVBoxLayout()
        self.body.addLayout(self.install_box)
        self.body.addStretch(1)
        self.install_view: InstallView | None = None
        self.ollama: InstanceInfo | None = None
        self._busy = False

    @property
    def ready(self) -> bool:
        choice = self.state.engine
        if choice is None or choice.state != EngineSetupState.READY:
            return False
        return choice.engine != EngineId.OLLAMA or self.ollama is not None

    def isComplete(self) -> bool:
        return self.ready and not self._busy

    def initializePage(self) -> None:
        choice = self.state.engine
        if choice is None:
            return
        self.setTitle(f"The engine: {choice.title}")
        self.detail.setText(choice.detail)
        self.cost.setText(engine_cost(choice))
        self.cost.setVisible(bool(self.cost.text()))
        external = choice.state == EngineSetupState.EXTERNAL
        self.link.setVisible(external and choice.install_url is not None)
        if choice.install_url:
            self.link.setText(f'Get it: <a href="{choice.install_url}">{choice.install_url}</a>')
        self.install_button.setText(f"Install {choice.title}")
        self.install_button.setVisible(choice.state == EngineSetupState.INSTALL)
        self.check_button.setVisible(external)
        if self.install_view is not None and self.install_view.engine != choice.engine:
            self.install_view.hide()
        if choice.state == EngineSetupState.READY:
            self.say("✓ Ready: nothing to install.")
            if choice.engine == EngineId.OLLAMA and self.ollama is None:
                self._connect_ollama()
        elif choice.state == EngineSetupState.INSTALL:
            self.say("Not installed yet. Install it now, or skip the guide and do it later.")
        else:
            self.say("Not installed. Install it with its own installer, then check again.")
        self.completeChanged.emit()

    def install(self) -> None:
        choice = self.state.engine
        if choice is None or self._busy:
            return
        if self.install_view is None or self.install_view.engine != choice.engine:
            self.install_view = InstallView(self._bridge, choice.engine)
            self.install_view.ended.connect(self._on_install_ended)
            self.install_box.addWidget(self.install_view)
        self._set_busy(True)
        self.say(f"Installing {choice.title}…")
        self.install_view.install(InstallRequest())

    def check_again(self) -> None:
        self._set_busy(True)
        self.say("Looking for engines again…")
        self._reload(refresh=True)

    def _reload(self, refresh: bool) -> None:
        call = self.state.calls.guide(refresh=refresh)
        self._ops.run(call, self._on_guide, on_failure=self._on_reload_failed)

    def _on_install_ended(self, job: InstallJob | None) -> None:
        if job is None or job.state != JobState.DONE:
            self._set_busy(False)
            self.say("The install did not finish: see below. Try again, or skip the guide.")
            return
        # The daemon looked for engines again when the install ended: read what it found
        # (the bridge's engines follow by themselves: the change feed says the job ended).
        self._reload(refresh=False)

    def _on_guide(self, guide: SetupGuide) -> None:
        self._set_busy(False)
        self.state.guide = guide
        current = self.state.engine
        found = next((c for c in guide.engines if current and c.engine == current.engine), None)
        if found is not None:
            self.state.engine = found
        self.initializePage()

    def _on_reload_failed(self, failure: Failure) -> None:
        self._set_busy(False)
        self.show_problem("Could not look for engines", failure)

    def _connect_ollama(self) -> None:
        self._set_busy(True)
        self.say("Connecting to Ollama (starting it if it is not running)…")
        call: Call = self.state.calls.ollama()
        self._ops.run(call, self._on_ollama, on_failure=self._on_ollama_failed)

    def _on_ollama(self, info: InstanceInfo) -> None:
        self.ollama = info
        self._set_busy(False)
        self.say(f"✓ Ready: Ollama serves at {info.url}.")

    def _on_ollama_failed(self, failure: Failure) -> None:
        self._set_busy(False)
        self.say("")
        self.show_problem("Ollama did not answer", failure)

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self.install_button.setEnabled(not busy)
        self.check_button.setEnabled(not busy)
        self.completeChanged.emit()
