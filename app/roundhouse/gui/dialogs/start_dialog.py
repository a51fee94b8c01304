"""Start an engine: the model, a preset, and the parameters that engine takes, checked as typed."""

from __future__ import annotations

import html
import os
import shlex
from pathlib import Path
from urllib.parse import urlsplit

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.engines import EngineId, EngineSpec, FlashAttention, InstanceOptions
from roundhouse.api.instances import InstanceInfo, Preset, PresetList, StartRequest
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.widgets.start_fit import StartFitLine

ADVANCED_FIELDS = frozenset({"served_name", "dtype", "extra_args"})
# One KV type for K and V: the engine has a single setting for both.
ONE_KV_TYPE = frozenset({EngineId.OLLAMA, EngineId.VLLM, EngineId.SGLANG})
KV_TYPES: dict[EngineId, tuple[str, ...]] = {
    EngineId.LLAMA_CPP: ("f16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl", "bf16", "f32"),
    EngineId.OLLAMA: ("f16", "q8_0", "q4_0"),
    EngineId.VLLM: ("auto", "fp8", "fp8_e4m3", "fp8_e5m2"),
    EngineId.SGLANG: ("auto", "fp8_e4m3", "fp8_e5m2"),
}
MODEL_HINTS: dict[EngineId, str] = {
    EngineId.LLAMA_CPP: "a .gguf file",
    EngineId.OLLAMA: "optional: an Ollama tag to load first (it serves every pulled model)",
    EngineId.MLX: "a Hugging Face repo id (mlx-community/…) or an MLX model folder",
    EngineId.VLLM: "a Hugging Face repo id (org/name) or a model folder",
    EngineId.SGLANG: "a Hugging Face repo id (org/name) or a model folder",
}
GPU_LAYER_CHOICES = (("engine default", None), ("auto", "auto"), ("all", "all"), ("number", 0))
FLASH_CHOICES = (("engine default", None), ("auto", "auto"), ("on", "on"), ("off", "off"))
NO_PRESET = "— none —"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}


def optional_spin(none_text: str, low: int, high: int, tip: str = "") -> QSpinBox:
    """A spin box whose lowest value (`low - 1`) reads `none_text` and means None."""
    spin = QSpinBox()
    spin.setRange(low - 1, high)
    spin.setSpecialValueText(none_text)
    spin.setValue(low - 1)
    spin.setAccelerated(True)
    spin.setToolTip(tip)
    return spin


def spin_value(spin: QSpinBox) -> int | None:
    return None if spin.value() == spin.minimum() else spin.value()


def set_spin(spin: QSpinBox, value: int | None) -> None:
    spin.setValue(spin.minimum() if value is None else value)


def _kv_combo(tip: str) -> QComboBox:
    combo = QComboBox()
    combo.setEditable(True)
    combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
    lineedit = combo.lineEdit()
    assert lineedit is not None
    lineedit.setPlaceholderText("engine default")
    combo.setToolTip(tip)
    return combo


def _row(*widgets: QWidget, stretch_first: bool = True) -> QWidget:
    box = QWidget()
    layout = QHBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    for index, widget in enumerate(widgets):
        layout.addWidget(widget, 1 if index == 0 and stretch_first else 0)
    return box


class StartDialog(QDialog):
    """Shows only the parameters of the chosen engine; the daemon's refusals stay in view."""

    started = Signal(object)  # InstanceInfo, once the daemon accepted the start

    def __init__(
        self,
        bridge: DaemonBridge,
        engines: list[EngineSpec],
        engine: EngineId | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._call: Call | None = None
        self._presets_key: tuple[EngineId, str] | None = None
        self._choose_when_loaded: str | None = None
        self._presets_call: Call | None = None
        self.file_dialog: QFileDialog | None = None
        self.failure: Failure | None = None
        self.preset_name_dialog: QInputDialog | None = None
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
        top = QFormLayout()
        top.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        top.addRow("Engine:", self.engine_combo)
        top.addRow("Model:", _row(self.model_edit, self.browse_button))
        top.addRow(
            "Preset:", _row(self.preset_combo, self.save_preset_button, self.delete_preset_button)
        )

        # -- parameters ----------------------------------------------------------------
        self.ctx_size = optional_spin(
            "engine default", 0, 1 << 24, "Tokens of context per instance; 0: the model's own"
        )
        self.ctx_size.setSingleStep(1024)
        self.gpu_layers_choice = QComboBox()
        for text, value in GPU_LAYER_CHOICES:
            self.gpu_layers_choice.addItem(text, value)
        self.gpu_layers_number = QSpinBox()
        self.gpu_layers_number.setRange(0, 999)
        self.gpu_layers_choice.currentIndexChanged.connect(self._on_gpu_layers_choice_changed)
        self.gpu_layers_number.hide()
        self.threads = optional_spin("auto", 1, 1024, "CPU threads for generation")
        self.parallel = optional_spin(
            "engine default", 1, 1024, "Requests served at once (slots); each gets the context"
        )
        self.flash_attn = QComboBox()
        for text, value in FLASH_CHOICES:
            self.flash_attn.addItem(text, value)
        self.cache_type_k = _kv_combo("Type of the K (keys) cache: smaller types save memory")
        self.cache_type_v = _kv_combo("Type of the V (values) cache: smaller types save memory")
        self.tensor_parallel = optional_spin(
            "engine default", 1, 64, "GPUs to split each layer over"
        )
        self.pipeline_parallel = optional_spin(
            "engine default", 1, 64, "Pipeline stages (GPUs or nodes) to split the layers over"
        )
        self.gpu_memory_utilization = QDoubleSpinBox()
        self.gpu_memory_utilization.setRange(0.0, 1.0)
        self.gpu_memory_utilization.setSingleStep(0.05)
        self.gpu_memory_utilization.setDecimals(2)
        self.gpu_memory_utilization.setSpecialValueText("engine default")
        self.gpu_memory_utilization.setToolTip("Fraction of each GPU's memory the engine may use")
        self.max_model_len = optional_spin(
            "engine default", 1, 1 << 24, "Longest sequence (prompt and answer) in tokens"
        )
        self.max_model_len.setSingleStep(1024)
        self.draft_model = QLineEdit()
        self.draft_model.setPlaceholderText("none: a smaller model of the same family")
        self.num_draft_tokens = optional_spin(
            "engine default", 1, 64, "Tokens the draft model proposes at a time"
        )
        self.max_loaded_models = optional_spin(
            "engine default", 0, 64, "Models Ollama keeps loaded at once"
        )
        self.port = optional_spin("auto (a free port)", 1, 65535, "The port the engine listens on")
        self.memory_report = QCheckBox("Report the engine's memory buffers")
        self.memory_report.setToolTip(
            "Logs at info level, where llama-server says what it allocated on each device: "
            "the Engines page then shows it beside the estimate. About 30 more log lines per "
            "request."
        )

        self._params = QFormLayout()
        self._params.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self._fields: dict[str, QWidget] = {}
        self._add_param("ctx_size", "Context size:", self.ctx_size)
        self._add_param(
            "n_gpu_layers", "GPU layers:", _row(self.gpu_layers_choice, self.gpu_layers_number)
        )
        self._add_param("threads", "Threads:", self.threads)
        self._add_param("parallel", "Parallel slots:", self.parallel)
        self._add_param("flash_attn", "Flash attention:", self.flash_attn)
        self._add_param("cache_type_k", "KV cache type K:", self.cache_type_k)
        self._add_param("cache_type_v", "KV cache type V:", self.cache_type_v)
        self._add_param("tensor_parallel", "Tensor parallel:", self.tensor_parallel)
        self._add_param("pipeline_parallel", "Pipeline parallel:", self.pipeline_parallel)
        self._add_param(
            "gpu_memory_utilization", "GPU memory utilization:", self.gpu_memory_utilization
        )
        self._add_param("max_model_len", "Max model length:", self.max_model_len)
        self._add_param("draft_model", "Draft model:", self.draft_model)
        self._add_param("num_draft_tokens", "Draft tokens:", self.num_draft_tokens)
        self._add_param("max_loaded_models", "Max loaded models:", self.max_loaded_models)
        self._add_param("memory_report", "Memory:", self.memory_report)
        self._params.addRow("Port:", self.port)
        params_box = QGroupBox("Parameters")
        params_box.setLayout(self._params)

        # -- advanced ------------------------------------------------------------------
        self.served_name = QLineEdit()
        self.served_name.setPlaceholderText("the model's file or repo name")
        self.dtype = QComboBox()
        self.dtype.setEditable(True)
        self.dtype.addItems(["", "auto", "float16", "bfloat16", "float32"])
        self.extra_args = QLineEdit()
        self.extra_args.setPlaceholderText("passed to the engine as typed, e.g. --seed 1")
        self._advanced = QFormLayout()
        self._advanced.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self._add_param("served_name", "Served name:", self.served_name, self._advanced)
        self._add_param("dtype", "Dtype:", self.dtype, self._advanced)
        self._add_param("extra_args", "Extra arguments:", self.extra_args, self._advanced)
        self.advanced_box = QWidget()
        self.advanced_box.setLayout(self._advanced)
        self.advanced_box.hide()
        self.advanced_button = QToolButton()
        self.advanced_button.setText("Advanced")
        self.advanced_button.setCheckable(True)
        self.advanced_button.setAutoRaise(True)
        self.advanced_button.setArrowType(Qt.ArrowType.RightArrow)
        self.advanced_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.advanced_button.toggled.connect(self._on_advanced_button_toggled)

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
        # Before the start: will this file fit, run with these options?
        self.fit_line = StartFitLine(bridge)
        self.buttons = QDialogButtonBox()
        self.start_button = self.buttons.addButton("Start", QDialogButtonBox.ButtonRole.AcceptRole)
        self.start_button.setDefault(True)
        self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.start)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(params_box)
        layout.addWidget(self.advanced_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.advanced_box)
        layout.addWidget(self.fit_line)
        layout.addWidget(self.problem_label)
        layout.addWidget(self.info_label)
        layout.addWidget(self.error_label)
        layout.addStretch(1)
        layout.addWidget(self.buttons)

        self._presets_timer = QTimer(self)
        self._presets_timer.setSingleShot(True)
        self._presets_timer.setInterval(300)
        self._presets_timer.timeout.connect(self.load_presets)
        self.engine_combo.currentIndexChanged.connect(self._on_engine_combo_changed)
        self.model_edit.textChanged.connect(self._on_model_edit_changed)
        for widget in (
            self.ctx_size,
            self.threads,
            self.parallel,
            self.tensor_parallel,
            self.pipeline_parallel,
            self.max_model_len,
            self.num_draft_tokens,
            self.max_loaded_models,
            self.port,
            self.gpu_layers_number,
        ):
            widget.valueChanged.connect(self.validate)
        self.gpu_memory_utilization.valueChanged.connect(self.validate)
        for line in (self.draft_model, self.served_name, self.extra_args):
            line.textChanged.connect(self.validate)
        for combo in (self.cache_type_k, self.cache_type_v, self.dtype):
            combo.currentTextChanged.connect(self.validate)
        if engine is not None:
            index = self.engine_combo.findData(engine.value)
            if index >= 0:
                self.engine_combo.setCurrentIndex(index)
        self._on_engine_combo_changed()

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
        try:
            extra = tuple(shlex.split(self.extra_args.text(), posix=os.name != "nt"))
        except ValueError:
            extra = ()
        values: dict[str, object] = {
            "ctx_size": spin_value(self.ctx_size),
            "n_gpu_layers": self._gpu_layers(),
            "threads": spin_value(self.threads),
            "parallel": spin_value(self.parallel),
            "flash_attn": _flash(self.flash_attn.currentData()),
            "cache_type_k": self.cache_type_k.currentText().strip() or None,
            "cache_type_v": self.cache_type_v.currentText().strip() or None,
            "served_name": self.served_name.text().strip() or None,
            "extra_args": extra,
            "tensor_parallel": spin_value(self.tensor_parallel),
            "pipeline_parallel": spin_value(self.pipeline_parallel),
            "gpu_memory_utilization": self.gpu_memory_utilization.value() or None,
            "max_model_len": spin_value(self.max_model_len),
            "dtype": self.dtype.currentText().strip() or None,
            "draft_model": self.draft_model.text().strip() or None,
            "num_draft_tokens": spin_value(self.num_draft_tokens),
            "max_loaded_models": spin_value(self.max_loaded_models),
            "memory_report": self.memory_report.isChecked(),
        }
        chosen = {name: value for name, value in values.items() if name in fields}
        return InstanceOptions(model=self.model() or None, **chosen)  # type: ignore[arg-type]

    def request(self) -> StartRequest:
        engine = self.engine()
        assert engine is not None, "Start is disabled without an engine"
        return StartRequest(engine=engine, options=self.options(), port=spin_value(self.port))

    def set_options(self, options: InstanceOptions) -> None:
        """Fill the form from saved options (a preset); the model field is left as it is."""
        set_spin(self.ctx_size, options.ctx_size)
        layers = options.n_gpu_layers
        if isinstance(layers, int):
            self.gpu_layers_choice.setCurrentIndex(self.gpu_layers_choice.findText("number"))
            self.gpu_layers_number.setValue(layers)
        else:
            self.gpu_layers_choice.setCurrentIndex(max(0, self.gpu_layers_choice.findData(layers)))
        set_spin(self.threads, options.threads)
        set_spin(self.parallel, options.parallel)
        flash = options.flash_attn.value if options.flash_attn else None
        self.flash_attn.setCurrentIndex(max(0, self.flash_attn.findData(flash)))
        self.cache_type_k.setCurrentText(options.cache_type_k or "")
        self.cache_type_v.setCurrentText(options.cache_type_v or "")
        self.served_name.setText(options.served_name or "")
        self.extra_args.setText(shlex.join(options.extra_args))
        set_spin(self.tensor_parallel, options.tensor_parallel)
        set_spin(self.pipeline_parallel, options.pipeline_parallel)
        self.gpu_memory_utilization.setValue(options.gpu_memory_utilization or 0.0)
        set_spin(self.max_model_len, options.max_model_len)
        self.dtype.setCurrentText(options.dtype or "")
        self.draft_model.setText(options.draft_model or "")
        set_spin(self.num_draft_tokens, options.num_draft_tokens)
        set_spin(self.max_loaded_models, options.max_loaded_models)
        self.memory_report.setChecked(options.memory_report)
        self.validate()

    def field_visible(self, name: str) -> bool:
        """Whether the parameter `name` (an InstanceOptions field) is offered now."""
        widget = self._fields[name]
        form = self._advanced if name in ADVANCED_FIELDS else self._params
        return form.isRowVisible(widget)

    # -- checking -----------------------------------------------------------------------

    def problems(self) -> list[str]:
        """What keeps Start disabled, in words; empty when the form can be sent."""
        engine = self.engine()
        if engine is None:
            return ["No engine is installed: install one first (see the engine cards)."]
        found: list[str] = []
        model = self.model()
        fields = self._takes.get(engine, frozenset())
        if not model and engine != EngineId.OLLAMA:
            found.append(f"Choose a model: {MODEL_HINTS.get(engine, 'a model')}.")
        elif engine == EngineId.LLAMA_CPP and not model.lower().endswith(".gguf"):
            found.append("llama.cpp loads GGUF files: choose a .gguf file.")
        local_path = model and self._daemon_is_local() and _looks_like_path(model)
        if local_path and not Path(model).exists():
            found.append(f"There is no file or folder at {model}.")
        if "extra_args" in fields:
            try:
                shlex.split(self.extra_args.text(), posix=os.name != "nt")
            except ValueError as exc:
                found.append(f"Extra arguments: {exc}.")
        options = self.options()
        k, v = options.cache_type_k, options.cache_type_v
        if engine in ONE_KV_TYPE and k and v and k != v:
            found.append(
                f"{self.engine_combo.currentText()} has one KV cache type for keys and values: "
                "choose the same type for K and V."
            )
        if options.ctx_size and options.max_model_len and options.ctx_size != options.max_model_len:
            found.append(
                "The context size and the maximum model length name the same limit here: "
                "set one of them."
            )
        if options.num_draft_tokens is not None and not options.draft_model:
            found.append("A number of draft tokens needs a draft model.")
        return found

    def validate(self) -> bool:
        found = self.problems()
        self.problem_label.setText("\n".join(found))
        self.problem_label.setVisible(bool(found))
        self.start_button.setEnabled(not found and self._call is None)
        if not found:
            self.fit_line.update_for(self.engine(), self.options())
        return not found

    def _daemon_is_local(self) -> bool:
        status = self._bridge.status
        return status is None or (urlsplit(status.url).hostname or "") in LOOPBACK_HOSTS

    # -- starting -----------------------------------------------------------------------

    def start(self) -> None:
        """Send the start; the dialog closes once the daemon accepted it, else says why."""
        if self._call is not None or not self.validate():
            return
        self.error_label.hide()
        self._show_info("Asking the daemon to start it…")
        self._call = call = self._bridge.start_instance(self.request())
        self.start_button.setEnabled(False)
        call.succeeded.connect(self._on_start_succeeded)
        call.failed.connect(self._on_start_failed)

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

    # -- presets ------------------------------------------------------------------------

    def load_presets(self) -> None:
        """Ask for the presets of this engine and model; the chooser fills when they come."""
        engine, model = self.engine(), self.model()
        self._clear_presets()
        if engine is None or not model:
            return
        self._presets_key = (engine, model)
        self._presets_call = call = self._bridge.presets(engine.value, model)
        # Bound methods, not lambdas: Qt drops the connection if the dialog is gone first.
        call.succeeded.connect(self._on_presets_loaded)
        call.failed.connect(self._on_presets_failed)

    def _clear_presets(self) -> None:
        """No presets until the daemon has said which this engine and model have."""
        self._presets_key = None
        self._presets_call = None
        self.preset_combo.clear()
        self.preset_combo.addItem(NO_PRESET, None)
        self.preset_combo.setEnabled(False)
        self.delete_preset_button.setEnabled(False)
        self.save_preset_button.setEnabled(self.engine() is not None and bool(self.model()))

    def preset_names(self) -> list[str]:
        return [self.preset_combo.itemText(i) for i in range(1, self.preset_combo.count())]

    def choose_preset(self, name: str) -> None:
        index = self.preset_combo.findText(name)
        if index < 1:
            raise KeyError(name)
        self.preset_combo.setCurrentIndex(index)
        self._on_preset_combo_activated(index)

    def save_preset_as(self, name: str) -> None:
        engine, model, name = self.engine(), self.model(), name.strip()
        if engine is None or not model:
            return
        if not name or len(name) > 80:
            self.show_failure(Failure("Not saved", "A preset's name has 1 to 80 characters."))
            return
        options = self.options()
        preset = Preset(engine=engine, model=model, name=name, options=options)
        call = self._bridge.save_preset(preset)
        call.succeeded.connect(self._on_preset_saved)
        call.failed.connect(self.show_failure)

    def _on_presets_loaded(self, found: PresetList) -> None:
        if self.sender() is not self._presets_call:
            return  # the engine or the model changed since it was asked
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
            self.set_options(preset.options)
            self._show_info(f"Preset “{preset.name}” filled in the parameters.")

    def _on_preset_saved(self, saved: Preset) -> None:
        self._show_info(f"Saved the preset “{saved.name}” for this model.")
        # Listed afresh (the daemon's order), with the saved one chosen.
        self._presets_timer.stop()
        self._choose_when_loaded = saved.name
        self.load_presets()

    def _on_save_preset_button_clicked(self) -> None:
        box = QInputDialog(self)
        box.setWindowTitle("Save as preset")
        box.setLabelText(f"Name of the preset for {Path(self.model()).name}:")
        current = self.preset_combo.currentData()
        box.setTextValue(current.name if isinstance(current, Preset) else "default")
        box.textValueSelected.connect(self.save_preset_as)
        self.preset_name_dialog = box
        # open(), not exec(): a nested event loop would stall qasync's tasks.
        box.open()

    def _on_delete_preset_button_clicked(self) -> None:
        preset = self.preset_combo.currentData()
        if not isinstance(preset, Preset):
            return
        self._show_info(f"Deleting the preset “{preset.name}”…")
        call = self._bridge.delete_preset(preset.engine.value, preset.model, preset.name)
        call.succeeded.connect(self._on_preset_deleted)
        call.failed.connect(self.show_failure)

    def _on_preset_deleted(self) -> None:
        self._show_info("Deleted the preset.")
        self.load_presets()

    def _update_delete_button(self) -> None:
        self.delete_preset_button.setEnabled(isinstance(self.preset_combo.currentData(), Preset))

    # -- reacting to the form -----------------------------------------------------------

    def _add_param(
        self, name: str, label: str, widget: QWidget, form: QFormLayout | None = None
    ) -> None:
        (form or self._params).addRow(label, widget)
        self._fields[name] = widget

    def _gpu_layers(self) -> int | str | None:
        value = self.gpu_layers_choice.currentData()
        if self.gpu_layers_choice.currentText() == "number":
            return self.gpu_layers_number.value()
        return value if isinstance(value, str) else None

    def _on_gpu_layers_choice_changed(self) -> None:
        self.gpu_layers_number.setVisible(self.gpu_layers_choice.currentText() == "number")
        self.validate()

    def _on_engine_combo_changed(self) -> None:
        engine = self.engine()
        fields = self._takes.get(engine, frozenset()) if engine else frozenset()
        for name, widget in self._fields.items():
            form = self._advanced if name in ADVANCED_FIELDS else self._params
            form.setRowVisible(widget, name in fields)
        has_advanced = bool(fields & ADVANCED_FIELDS)
        self.advanced_button.setVisible(has_advanced)
        self.advanced_box.setVisible(has_advanced and self.advanced_button.isChecked())
        for combo in (self.cache_type_k, self.cache_type_v):
            text = combo.currentText()
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(["", *KV_TYPES.get(engine, ())] if engine else [""])
            combo.setCurrentText(text)
            combo.blockSignals(False)
        hint = MODEL_HINTS.get(engine, "") if engine else ""
        self.model_edit.setPlaceholderText(hint[:1].upper() + hint[1:])
        self.browse_button.setVisible(engine != EngineId.OLLAMA)
        self.browse_button.setToolTip(
            "Choose a .gguf file" if engine == EngineId.LLAMA_CPP else "Choose a model folder"
        )
        self._clear_presets()
        self._presets_timer.start()
        self.validate()
        self.adjustSize()

    def _on_model_edit_changed(self) -> None:
        self.error_label.hide()
        self._clear_presets()
        self._presets_timer.start()
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

    def _on_advanced_button_toggled(self, checked: bool) -> None:
        self.advanced_button.setArrowType(
            Qt.ArrowType.DownArrow if checked else Qt.ArrowType.RightArrow
        )
        self.advanced_box.setVisible(checked)

    def _show_info(self, text: str) -> None:
        self.info_label.setText(text)
        self.info_label.show()


def _flash(value: object) -> FlashAttention | None:
    return FlashAttention(value) if isinstance(value, str) else None


def _looks_like_path(model: str) -> bool:
    return Path(model).is_absolute() or model.startswith(("~", "./", "../"))
