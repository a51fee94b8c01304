"""Start an engine: the model, a preset, and the parameters that engine takes, checked as typed."""

from __future__ import annotations

import html
from pathlib import Path
from urllib.parse import urlsplit

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.engine_nodes import VllmAcrossAnswer, VllmAcrossRequest, VllmExecutor
from roundhouse.api.engines import EngineId, EngineSpec, InstanceOptions
from roundhouse.api.instances import InstanceInfo, StartRequest
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.dialogs.start_checks import MODEL_HINTS, start_problems
from roundhouse.gui.widgets.start_capabilities import StartCapabilities
from roundhouse.gui.widgets.start_defaults import StartDefaults, StartValues
from roundhouse.gui.widgets.start_fit import StartFitLine
from roundhouse.gui.widgets.start_params import StartParams, form_row, spin_value
from roundhouse.gui.widgets.start_presets import StartPresets
from roundhouse.gui.widgets.start_projector import StartProjector

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}


# The fields the machine's values fill in, and their names in words.
FILLED_FIELDS = (
    ("ctx_size", "context"),
    ("parallel", "slots"),
    ("n_gpu_layers", "GPU layers"),
    ("threads", "threads"),
)


class StartDialog(QDialog):
    """Shows only the parameters of the chosen engine; the daemon's refusals stay in view."""

    started = Signal(object)  # InstanceInfo, once the daemon accepted the start

    def __init__(
        self,
        bridge: DaemonBridge,
        engines: list[EngineSpec],
        engine: EngineId | None = None,
        parent: QWidget | None = None,
        *,
        offer_chat: bool = False,
    ) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self._call: Call | None = None
        self.file_dialog: QFileDialog | None = None
        self.failure: Failure | None = None
        self.setWindowTitle("Start an engine")
        self.setMinimumWidth(600)

        # -- what to run ---------------------------------------------------------------
        self.engine_combo = QComboBox()
        # What each engine takes comes from the daemon's catalog (it refuses the rest).
        self._takes = {spec.id: frozenset(spec.options) for spec in engines}
        for spec in engines:
            self.engine_combo.addItem(spec.title, spec.id.value)
        self.model_edit = QLineEdit()
        self.model_edit.setClearButtonEnabled(True)
        self.browse_button = QPushButton("Browse…")
        self.browse_button.clicked.connect(self._on_browse_button_clicked)
        self.presets = StartPresets(bridge, self, self)
        self.preset_combo = self.presets.preset_combo
        self.save_preset_button = self.presets.save_preset_button
        self.delete_preset_button = self.presets.delete_preset_button
        top = QFormLayout()
        top.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        top.addRow("Engine:", self.engine_combo)
        top.addRow("Model:", form_row(self.model_edit, self.browse_button))
        top.addRow(
            "Preset:",
            form_row(self.preset_combo, self.save_preset_button, self.delete_preset_button),
        )
        # vLLM only: the other nodes on paired machines, this one the head (ADR 39).
        self.across_edit = QLineEdit()
        self.across_edit.setClearButtonEnabled(True)
        self.across_edit.setPlaceholderText(
            "Paired machines by name, e.g. gpu-b, gpu-c; empty: this machine alone"
        )
        self.across_edit.setToolTip(
            "Split the model across this machine and paired ones: tensor parallel inside "
            "each, pipeline parallel across them. Each needs the same GPUs, vLLM and the model."
        )
        self.across_edit.textChanged.connect(self._on_model_edit_changed)
        top.addRow("Across paired machines:", self.across_edit)
        # With machines named: vLLM here only, the workers placed by the user's Ray cluster.
        self.ray_check = QCheckBox("Use the Ray cluster I run on these machines")
        self.ray_check.setToolTip(
            "vLLM starts on this machine only and your Ray cluster runs its workers on the "
            "paired machines. Roundhouse checks that the cluster answers first, and does not "
            "start or stop Ray."
        )
        self.ray_check.setEnabled(False)
        self.across_edit.textChanged.connect(self._on_across_changed)
        top.addRow("", self.ray_check)
        self._top = top

        # -- parameters, reachable as before: tests and the screenshot steps fill them --
        self.capabilities = StartCapabilities(self)
        self.params = params = StartParams(self, self.capabilities)
        self.ctx_size = params.ctx_size
        self.gpu_layers_choice = params.gpu_layers_choice
        self.gpu_layers_number = params.gpu_layers_number
        self.threads = params.threads
        self.parallel = params.parallel
        self.flash_attn = params.flash_attn
        self.cache_type_k = params.cache_type_k
        self.cache_type_v = params.cache_type_v
        self.tensor_parallel = params.tensor_parallel
        self.pipeline_parallel = params.pipeline_parallel
        self.gpu_memory_utilization = params.gpu_memory_utilization
        self.max_model_len = params.max_model_len
        self.draft_model = params.draft_model
        self.num_draft_tokens = params.num_draft_tokens
        self.max_loaded_models = params.max_loaded_models
        self.port = params.port
        self.memory_report = params.memory_report
        self.trust_remote_code = params.trust_remote_code
        self.served_name = params.served_name
        self.dtype = params.dtype
        self.extra_args = params.extra_args
        self.advanced_box = params.advanced_box
        self.advanced_button = params.advanced_button

        # -- answers -------------------------------------------------------------------
        self.problem_label = QLabel()
        self.problem_label.setObjectName("formProblem")
        self.problem_label.setWordWrap(True)
        self.info_label = QLabel()
        self.info_label.setWordWrap(True)
        self.info_label.hide()
        self.error_label = QLabel()
        self.error_label.setObjectName("dialogError")
        self.error_label.setWordWrap(True)
        self.error_label.setTextFormat(Qt.TextFormat.RichText)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.hide()
        # Before the start: the values the engine will run with, and will they fit?
        self.defaults = StartDefaults(bridge, self)
        self.defaults.ready.connect(self._on_defaults_ready)
        self.defaults.unknown.connect(self._on_defaults_unknown)
        self.defaults_label = QLabel()
        self.defaults_label.setObjectName("hint")
        self.defaults_label.setWordWrap(True)
        self.defaults_label.hide()
        # The vision projector (ADR 45), a group of its own under the parameters.
        self.projector = StartProjector(self)
        self.fit_line = StartFitLine(bridge)
        self.fit_line.fitted.connect(self.capabilities.show_fit)
        self.capabilities.attach(bridge)
        # Whoever opened the dialog follows the start and opens the chat (the dialog closes
        # as soon as the daemon accepted the start, long before the model is loaded).
        self.open_chat_check = QCheckBox("Open the chat with this model when it is ready")
        self.open_chat_check.setChecked(offer_chat)
        self.open_chat_check.setVisible(offer_chat)
        self.buttons = QDialogButtonBox()
        self.start_button = self.buttons.addButton("Start", QDialogButtonBox.ButtonRole.AcceptRole)
        self.start_button.setDefault(True)
        self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.start)
        self.buttons.rejected.connect(self.reject)

        # The groups scroll: with the capabilities they are taller than a laptop's screen,
        # and a dialog squeezed to the screen laid its rows over one another.
        groups = QWidget()
        groups_layout = QVBoxLayout(groups)
        groups_layout.setContentsMargins(0, 0, 0, 0)
        groups_layout.addWidget(params.params_box)
        groups_layout.addWidget(self.projector)
        groups_layout.addWidget(self.capabilities.box)
        groups_layout.addWidget(self.advanced_button, 0, Qt.AlignmentFlag.AlignLeft)
        groups_layout.addWidget(self.advanced_box)
        groups_layout.addWidget(self.defaults_label)
        groups_layout.addStretch(1)
        self.groups_scroll = QScrollArea()
        self.groups_scroll.setWidgetResizable(True)
        self.groups_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.groups_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.groups_scroll.setWidget(groups)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.groups_scroll, 1)
        layout.addWidget(self.fit_line)
        layout.addWidget(self.open_chat_check)
        layout.addWidget(self.problem_label)
        layout.addWidget(self.info_label)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)

        self.engine_combo.currentIndexChanged.connect(self._on_engine_combo_changed)
        self.model_edit.textChanged.connect(self._on_model_edit_changed)
        params.connect_changes(self.validate)
        self.projector.changed.connect(self.validate)
        if engine is not None:
            index = self.engine_combo.findData(engine.value)
            if index >= 0:
                self.engine_combo.setCurrentIndex(index)
        self._on_engine_combo_changed()
        # Tall enough to show every group without scrolling where the screen allows it.
        # The application's screen, not self.screen(): the wrapper that one returns before
        # the dialog has a window took the QScreen with it when collected (PySide 6).
        primary = QGuiApplication.primaryScreen()
        room = primary.availableGeometry().height() * 9 // 10 if primary is not None else 800
        wanted = (
            self.sizeHint().height()
            + groups.sizeHint().height()
            - (self.groups_scroll.sizeHint().height())
        )
        self.resize(max(self.width(), 640), min(wanted, room))

    @property
    def preset_name_dialog(self) -> QInputDialog | None:
        """The open "Save as preset" name box, if one was opened."""
        return self.presets.name_dialog

    # -- reading and filling the form ---------------------------------------------------

    def engine(self) -> EngineId | None:
        data = self.engine_combo.currentData()
        return EngineId(data) if data is not None else None

    def model(self) -> str:
        """The model as typed; a path starting with ~ is expanded (the daemon would not)."""
        model = self.model_edit.text().strip()
        return str(Path(model).expanduser()) if model.startswith("~") else model

    def options(self) -> InstanceOptions:
        """The options the form shows for the chosen engine (the hidden ones are left out)."""
        engine = self.engine()
        fields = self._takes.get(engine, frozenset()) if engine else frozenset()
        values = self.params.values()
        chosen = {name: value for name, value in values.items() if name in fields}
        if engine == EngineId.LLAMA_CPP:
            chosen["mmproj"] = self.projector.value()
        return InstanceOptions.model_validate({"model": self.model() or None, **chosen})

    def request(self) -> StartRequest:
        engine = self.engine()
        assert engine is not None, "Start is disabled without an engine"
        return StartRequest(engine=engine, options=self.options(), port=spin_value(self.port))

    def across(self) -> list[str]:
        """The paired machines to run the other nodes on (vLLM only); empty: this one alone."""
        if self.engine() != EngineId.VLLM:
            return []
        return [name.strip() for name in self.across_edit.text().split(",") if name.strip()]

    def _on_across_changed(self, text: str) -> None:
        self.ray_check.setEnabled(bool(text.strip()))

    def executor(self) -> VllmExecutor:
        """How vLLM reaches the paired machines: its own launcher, or the user's Ray."""
        return VllmExecutor.RAY if self.ray_check.isChecked() else VllmExecutor.MP

    def set_options(self, options: InstanceOptions) -> None:
        """Fill the form from saved options (a preset); the model field is left as it is."""
        self.params.set_options(options)
        self.projector.set_value(options.mmproj)
        self.validate()

    def field_visible(self, name: str) -> bool:
        """Whether the parameter `name` (an InstanceOptions field) is offered now."""
        return self.params.field_visible(name)

    # -- checking -----------------------------------------------------------------------

    def problems(self) -> list[str]:
        """What keeps Start disabled, in words; empty when the form can be sent."""
        engine = self.engine()
        if engine is None:
            return ["No engine is installed: install one first (see the engine cards)."]
        return start_problems(
            engine,
            self.engine_combo.currentText(),
            self.model(),
            self._takes.get(engine, frozenset()),
            self.extra_args.text(),
            self.options(),
            self._daemon_is_local(),
        )

    def validate(self) -> bool:
        found = self.problems()
        self.problem_label.setText("\n".join(found))
        self.problem_label.setVisible(bool(found))
        self.start_button.setEnabled(not found and self._call is None)
        # A model the form refuses is not sized: its values would describe nothing.
        if self.defaults.update_for(self.engine(), "" if found else self.model()):
            self.defaults_label.hide()
            self.params.forget_filled()
        if not found:
            self.fit_line.update_for(self.engine(), self.options())
        self.capabilities.offer_drafts_for(self.engine(), self.model())
        self._say_defaults()
        return not found

    @property
    def open_chat_when_ready(self) -> bool:
        return not self.open_chat_check.isHidden() and self.open_chat_check.isChecked()

    def _daemon_is_local(self) -> bool:
        status = self._bridge.status
        return status is None or (urlsplit(status.url).hostname or "") in LOOPBACK_HOSTS

    # -- starting -----------------------------------------------------------------------

    def start(self) -> None:
        """Send the start; the dialog closes once the daemon accepted it, else says why."""
        if self._call is not None or not self.validate():
            return
        self.error_label.hide()
        self.show_info("Asking the daemon to start it…")
        self.start_button.setEnabled(False)
        peers = self.across()
        if peers:
            across = VllmAcrossRequest(
                options=self.options(),
                peers=peers,
                executor=self.executor(),
                port=spin_value(self.port),
            )
            self._call = call = self._bridge.start_vllm_across(across)
            self._ops.run(call, self._on_across_accepted, on_failure=self._on_start_failed)
            return
        self._call = call = self._bridge.start_instance(self.request())
        self._ops.run(call, self._on_start_succeeded, on_failure=self._on_start_failed)

    def _on_across_accepted(self, answer: VllmAcrossAnswer) -> None:
        assert answer.instance is not None  # a start, not a plan
        self._on_start_succeeded(answer.instance)

    def _on_start_succeeded(self, info: InstanceInfo) -> None:
        self._call = None
        self.started.emit(info)
        self.accept()

    def _on_start_failed(self, failure: Failure) -> None:
        self._call = None
        self.info_label.hide()
        self.show_failure(failure)
        self.validate()

    def show_failure(self, failure: Failure) -> None:
        self.failure = failure
        self.error_label.setText(
            f"<b>{html.escape(failure.title)}</b><br>{html.escape(failure.detail)}"
        )
        self.error_label.show()

    def error_text(self) -> str:
        """The daemon's last refusal in words ('' when none is shown)."""
        return "" if self.failure is None or self.error_label.isHidden() else str(self.failure)

    def show_info(self, text: str) -> None:
        self.info_label.setText(text)
        self.info_label.show()

    # -- presets ------------------------------------------------------------------------

    def load_presets(self) -> None:
        """Ask for the presets of this engine and model; the chooser fills when they come."""
        self.presets.load_presets()

    def preset_names(self) -> list[str]:
        return self.presets.preset_names()

    def choose_preset(self, name: str) -> None:
        self.presets.choose_preset(name)

    def save_preset_as(self, name: str) -> None:
        self.presets.save_preset_as(name)

    # -- reacting to the form -----------------------------------------------------------

    def _on_defaults_ready(self, values: StartValues) -> None:
        self.params.fill_in(values)
        self._say_defaults()

    def _say_defaults(self) -> None:
        """What was filled in, and which of those fields hold a value set here or by a
        preset instead (the words must not claim a value the field does not show)."""
        values = self.defaults.values
        if values is None:
            return
        kept = [label for field, label in FILLED_FIELDS if field in self.params.user_fields]
        text = values.words
        if kept:
            text = text.replace("Filled in for this machine:", "Chosen for this machine:", 1)
            text = f"{text} The {', '.join(kept)} shown are set here or by the preset instead."
        self.defaults_label.setText(text)
        self.defaults_label.show()

    def _on_defaults_unknown(self, reason: str) -> None:
        self.defaults_label.setText(
            f"Fields left empty are the engine's to choose: this file could not be sized "
            f"({reason.rstrip('.')})."
        )
        self.defaults_label.show()

    def _on_engine_combo_changed(self) -> None:
        engine = self.engine()
        fields = self._takes.get(engine, frozenset()) if engine else frozenset()
        self.params.offer(engine, fields)
        self.projector.setVisible(engine == EngineId.LLAMA_CPP)
        inventory = self._bridge.inventory
        self.params.say_engine_defaults(engine, inventory.gpus if inventory is not None else [])
        hint = MODEL_HINTS.get(engine, "") if engine else ""
        self.model_edit.setPlaceholderText(hint[:1].upper() + hint[1:])
        self.browse_button.setVisible(engine != EngineId.OLLAMA)
        self._top.setRowVisible(self.across_edit, engine == EngineId.VLLM)
        self._top.setRowVisible(self.ray_check, engine == EngineId.VLLM)
        self.browse_button.setToolTip(
            "Choose a .gguf file" if engine == EngineId.LLAMA_CPP else "Choose a model folder"
        )
        self.presets.reload_soon()
        self.validate()
        self.adjustSize()

    def _on_model_edit_changed(self) -> None:
        self.error_label.hide()
        self.presets.reload_soon()
        self.validate()

    def _on_browse_button_clicked(self) -> None:
        engine = self.engine()
        current = self.model()
        start_in = str(Path(current).parent) if current and Path(current).parent.exists() else ""
        box = QFileDialog(self, "Choose a model", start_in or str(Path.home()))
        if engine == EngineId.LLAMA_CPP:
            box.setFileMode(QFileDialog.FileMode.ExistingFile)
            box.setNameFilters(["GGUF models (*.gguf)", "All files (*)"])
        else:
            box.setFileMode(QFileDialog.FileMode.Directory)
            box.setOption(QFileDialog.Option.ShowDirsOnly, True)
        box.fileSelected.connect(self.model_edit.setText)
        self.file_dialog = box
        box.open()
