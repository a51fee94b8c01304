"""The start dialog's parameter widgets: one row per engine option, read and filled as typed."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QSpinBox,
    QToolButton,
    QWidget,
)

from roundhouse.api.engines import EngineId, FlashAttention, InstanceOptions
from roundhouse.api.hardware import GpuInfo
from roundhouse.gui.widgets.start_capability_words import with_hint
from roundhouse.gui.widgets.start_engine_defaults import default_words

if TYPE_CHECKING:
    from roundhouse.gui.widgets.start_capabilities import StartCapabilities
    from roundhouse.gui.widgets.start_defaults import StartValues

ADVANCED_FIELDS = frozenset(
    {"served_name", "dtype", "extra_args", "tool_parser", "reasoning_parser", "rpc"}
)
# Offered in the parser boxes; any other name the engine knows may be typed. Empty: chosen
# by the daemon for the model's family; "none": off.
TOOL_PARSERS = ("", "none", "hermes", "llama3_json", "mistral", "qwen3_coder", "openai", "qwen25")
REASONING_PARSERS = ("", "none", "qwen3", "deepseek_r1", "deepseek-r1", "openai_gptoss", "deepseek")
KV_TYPES: dict[EngineId, tuple[str, ...]] = {
    EngineId.LLAMA_CPP: ("f16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl", "bf16", "f32"),
    EngineId.OLLAMA: ("f16", "q8_0", "q4_0"),
    EngineId.VLLM: ("auto", "fp8", "fp8_e4m3", "fp8_e5m2"),
    EngineId.SGLANG: ("auto", "fp8_e4m3", "fp8_e5m2"),
}
# The fields the start dialog fills in with the values the engine will use (start_defaults).
FILLED_FIELDS = ("ctx_size", "parallel", "n_gpu_layers", "threads")
GPU_LAYER_CHOICES = (("engine default", None), ("auto", "auto"), ("all", "all"), ("number", 0))
FLASH_CHOICES = (("engine default", None), ("auto", "auto"), ("on", "on"), ("off", "off"))


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


def form_row(*widgets: QWidget, stretch_first: bool = True) -> QWidget:
    """Widgets side by side in one form field; the first takes the spare width."""
    box = QWidget()
    layout = QHBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    for index, widget in enumerate(widgets):
        layout.addWidget(widget, 1 if index == 0 and stretch_first else 0)
    return box


def _kv_combo(tip: str) -> QComboBox:
    combo = QComboBox()
    combo.setEditable(True)
    combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
    lineedit = combo.lineEdit()
    assert lineedit is not None
    lineedit.setPlaceholderText("engine default")
    combo.setToolTip(tip)
    return combo


class StartParams(QObject):
    """Builds `params_box`, `advanced_button` and `advanced_box` for the dialog to lay out,
    and places the capability rows in `capabilities.box` (ADR 48); only the rows of the
    options the chosen engine takes are shown."""

    def __init__(
        self, parent: QObject | None = None, capabilities: StartCapabilities | None = None
    ) -> None:
        super().__init__(parent)
        if capabilities is None:
            # Here, not at the top: start_capabilities builds on this module's helpers.
            from roundhouse.gui.widgets.start_capabilities import StartCapabilities

            capabilities = StartCapabilities(self)
        self.capabilities = caps = capabilities
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
        self.trust_remote_code = QCheckBox("Trust remote code (runs Python from the model's repo)")
        self.trust_remote_code.setToolTip(
            "Some models need code from their repository to load. The engine then runs that "
            "code with your rights: turn this on only for repositories you trust."
        )
        self.reranking = QCheckBox("Serve /v1/rerank (a reranker model)")
        self.reranking.setToolTip(
            "Starts llama-server with --reranking: the gateway's /v1/rerank then ranks "
            "documents with this model. Only reranker models give meaningful scores."
        )
        self.memory_report = QCheckBox("Report the engine's memory buffers")
        self.memory_report.setToolTip(
            "Logs at info level, where llama-server says what it allocated on each device: "
            "the Engines page then shows it beside the estimate. About 30 more log lines per "
            "request."
        )

        self._params = QFormLayout()
        self._params.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self._fields: dict[str, QWidget] = {}
        self._forms: dict[str, QFormLayout] = {}
        self._add_param("ctx_size", "Context size:", self.ctx_size)
        self._add_param(
            "n_gpu_layers", "GPU layers:", form_row(self.gpu_layers_choice, self.gpu_layers_number)
        )
        self._add_param("threads", "Threads:", self.threads)
        self._add_param("parallel", "Parallel slots:", self.parallel)
        self._add_param("tensor_parallel", "Tensor parallel:", self.tensor_parallel)
        self._add_param("pipeline_parallel", "Pipeline parallel:", self.pipeline_parallel)
        self._add_param(
            "gpu_memory_utilization", "GPU memory utilization:", self.gpu_memory_utilization
        )
        self._add_param("max_model_len", "Max model length:", self.max_model_len)
        self._add_param("max_loaded_models", "Max loaded models:", self.max_loaded_models)
        self._add_param("memory_report", "Memory:", self.memory_report)
        self._add_param("reranking", "Reranking:", self.reranking)
        self._add_param("trust_remote_code", "Remote code:", self.trust_remote_code)
        # llama.cpp: paired machines that each lend an rpc-server for this instance (ADR 40).
        self.across = QLineEdit()
        self.across.setClearButtonEnabled(True)
        self.across.setPlaceholderText("none: this machine alone; or paired machines, e.g. gpu-b")
        self.across.setToolTip(
            "Split the model's layers across this machine and these paired machines (names, "
            "commas between) with llama.cpp's RPC: each lends an rpc-server on its own "
            "loopback, reached only over mutual TLS, for as long as this instance runs. For a "
            "model that does not fit here: it is slower than one machine that fits it."
        )
        self._add_param("across", "Split across machines:", self.across)
        self._params.addRow("Port:", self.port)
        self.params_box = QGroupBox("Parameters")
        self.params_box.setLayout(self._params)

        # -- capabilities (ADR 48): each with the sentence that says when to use it -----
        for name, label, widget in (
            ("flash_attn", "Flash attention:", self.flash_attn),
            ("cache_type_k", "KV cache type K:", self.cache_type_k),
            ("cache_type_v", "KV cache type V:", self.cache_type_v),
        ):
            self._add_param(name, label, with_hint(widget, name), caps.form)
        self._add_param(
            "draft_model", "Draft model:", caps.attach_draft(self.draft_model), caps.form
        )
        self._add_param(
            "num_draft_tokens",
            "Draft tokens:",
            with_hint(self.num_draft_tokens, "num_draft_tokens"),
            caps.form,
        )
        for name, label, row in caps.rows:
            self._add_param(name, label, row, caps.form)
        caps.use_all_layers.connect(self._on_use_all_layers)

        # -- advanced ------------------------------------------------------------------
        self.served_name = QLineEdit()
        self.served_name.setPlaceholderText("the model's file or repo name")
        self.dtype = QComboBox()
        self.dtype.setEditable(True)
        self.dtype.addItems(["", "auto", "float16", "bfloat16", "float32"])
        self.extra_args = QLineEdit()
        self.extra_args.setPlaceholderText("passed to the engine as typed, e.g. --seed 1")
        self.tool_parser = _editable_combo(TOOL_PARSERS, "chosen for the model")
        self.tool_parser.setToolTip(
            "The engine's tool-call parser. Empty: chosen from the model's family (the log "
            "says which and why); none: no tool calls."
        )
        self.reasoning_parser = _editable_combo(REASONING_PARSERS, "chosen for the model")
        self.reasoning_parser.setToolTip(
            "The engine's reasoning parser (llama.cpp: its reasoning format). Empty: chosen "
            "for the model; none: thoughts stay in the reply's text."
        )
        self.rpc = QLineEdit()
        self.rpc.setPlaceholderText("none: this machine alone")
        self.rpc.setToolTip(
            "llama.cpp: split the model over rpc-servers on other machines, HOST:PORT with "
            "commas between (the daemon starts those on 127.0.0.1 with the instance). "
            "rpc-server has no authentication: run it bound to the address agreed with "
            "this machine only, never on every interface."
        )
        self._advanced = QFormLayout()
        self._advanced.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self._add_param("served_name", "Served name:", self.served_name, self._advanced)
        self._add_param("dtype", "Dtype:", self.dtype, self._advanced)
        self._add_param("extra_args", "Extra arguments:", self.extra_args, self._advanced)
        self._add_param("tool_parser", "Tool-call parser:", self.tool_parser, self._advanced)
        self._add_param(
            "reasoning_parser", "Reasoning parser:", self.reasoning_parser, self._advanced
        )
        self._add_param("rpc", "RPC workers:", self.rpc, self._advanced)
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

        # Fields the user (or a preset) set: filled-in values never replace theirs.
        self.user_fields: set[str] = set()
        self._filling = False
        for name, spin in (
            ("ctx_size", self.ctx_size),
            ("parallel", self.parallel),
            ("threads", self.threads),
            ("n_gpu_layers", self.gpu_layers_number),
        ):
            spin.valueChanged.connect(lambda _, name=name: self._on_user_changed(name))
        self.gpu_layers_choice.currentIndexChanged.connect(
            lambda _: self._on_user_changed("n_gpu_layers")
        )

    def fill_in(self, values: StartValues) -> None:
        """Show the values the engine will use in the fields nobody set; each stays editable
        (a change is the user's from then on)."""
        self._filling = True
        try:
            if "ctx_size" not in self.user_fields:
                self.ctx_size.setValue(values.ctx_size)
            if "parallel" not in self.user_fields:
                self.parallel.setValue(values.parallel)
            if "threads" not in self.user_fields and values.threads is not None:
                self.threads.setValue(values.threads)
            if "n_gpu_layers" not in self.user_fields:
                self.gpu_layers_number.setValue(values.gpu_layers)
                self.gpu_layers_choice.setCurrentIndex(self.gpu_layers_choice.findText("number"))
        finally:
            self._filling = False

    def forget_filled(self) -> None:
        """Back to the engine's own choice in the fields nobody set (the values filled in were
        for another file or engine)."""
        self._filling = True
        try:
            if "ctx_size" not in self.user_fields:
                set_spin(self.ctx_size, None)
            if "parallel" not in self.user_fields:
                set_spin(self.parallel, None)
            if "threads" not in self.user_fields:
                set_spin(self.threads, None)
            if "n_gpu_layers" not in self.user_fields:
                self.gpu_layers_choice.setCurrentIndex(0)
        finally:
            self._filling = False

    def _on_user_changed(self, name: str) -> None:
        if not self._filling:
            self.user_fields.add(name)

    def connect_changes(self, slot: Callable[[], object]) -> None:
        """Call `slot` when a field that the checks or the fit estimate read changes (the
        memory checkbox changes neither)."""
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
            widget.valueChanged.connect(slot)
        self.gpu_memory_utilization.valueChanged.connect(slot)
        # Flash attention changes the compute buffer, so the fit line is asked again.
        for choice in (self.gpu_layers_choice, self.flash_attn):
            choice.currentIndexChanged.connect(slot)
        for line in (self.draft_model, self.served_name, self.extra_args, self.rpc, self.across):
            line.textChanged.connect(slot)
        for combo in (self.cache_type_k, self.cache_type_v, self.dtype):
            combo.currentTextChanged.connect(slot)
        self.capabilities.connect_changes(slot)

    def values(self) -> dict[str, object]:
        """Every field's value, by InstanceOptions name (hidden ones too)."""
        try:
            extra = tuple(shlex.split(self.extra_args.text(), posix=os.name != "nt"))
        except ValueError:
            extra = ()
        return {
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
            "reranking": self.reranking.isChecked(),
            "trust_remote_code": self.trust_remote_code.isChecked(),
            "tool_parser": self.tool_parser.currentText().strip() or None,
            "reasoning_parser": self.reasoning_parser.currentText().strip() or None,
            "rpc": tuple(p.strip() for p in self.rpc.text().split(",") if p.strip()),
            "across": tuple(p.strip() for p in self.across.text().split(",") if p.strip()),
            **self.capabilities.values(),
        }

    def set_options(self, options: InstanceOptions) -> None:
        """Fill the fields from saved options; the model is not among them. A preset is the
        user's own choice: filled-in values leave its fields alone."""
        self.user_fields.update(FILLED_FIELDS)
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
        self.reranking.setChecked(options.reranking)
        self.trust_remote_code.setChecked(options.trust_remote_code)
        self.tool_parser.setCurrentText(options.tool_parser or "")
        self.reasoning_parser.setCurrentText(options.reasoning_parser or "")
        self.rpc.setText(",".join(options.rpc))
        self.across.setText(",".join(options.across))
        self.capabilities.set_options(options)

    def field_visible(self, name: str) -> bool:
        """Whether the parameter `name` (an InstanceOptions field) is offered now."""
        return self._forms[name].isRowVisible(self._fields[name])

    def say_engine_defaults(self, engine: EngineId | None, gpus: Sequence[GpuInfo]) -> None:
        """What `engine` does with the context and slots left empty, in their empty text."""
        words = default_words(engine, gpus)
        self.ctx_size.setSpecialValueText(words["ctx_size"])
        self.parallel.setSpecialValueText(words["parallel"])

    def offer(self, engine: EngineId | None, fields: frozenset[str]) -> None:
        """Show the rows of `fields` alone, and the KV cache types that `engine` knows."""
        for name, widget in self._fields.items():
            self._forms[name].setRowVisible(widget, name in fields)
        caps = {n for n, form in self._forms.items() if form is self.capabilities.form}
        self.capabilities.box.setVisible(bool(fields & caps))
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

    def _add_param(
        self, name: str, label: str, widget: QWidget, form: QFormLayout | None = None
    ) -> None:
        form = form or self._params
        form.addRow(label, widget)
        self._fields[name] = widget
        self._forms[name] = form

    def _gpu_layers(self) -> int | str | None:
        value = self.gpu_layers_choice.currentData()
        if self.gpu_layers_choice.currentText() == "number":
            return self.gpu_layers_number.value()
        return value if isinstance(value, str) else None

    def _on_use_all_layers(self) -> None:
        # The proposed N keeps experts in RAM so that every layer fits on the GPU.
        self.gpu_layers_choice.setCurrentIndex(self.gpu_layers_choice.findData("all"))

    def _on_gpu_layers_choice_changed(self) -> None:
        self.gpu_layers_number.setVisible(self.gpu_layers_choice.currentText() == "number")

    def _on_advanced_button_toggled(self, checked: bool) -> None:
        self.advanced_button.setArrowType(
            Qt.ArrowType.DownArrow if checked else Qt.ArrowType.RightArrow
        )
        self.advanced_box.setVisible(checked)


def _flash(value: object) -> FlashAttention | None:
    return FlashAttention(value) if isinstance(value, str) else None


def _editable_combo(items: tuple[str, ...], placeholder: str) -> QComboBox:
    combo = QComboBox()
    combo.setEditable(True)
    combo.addItems(list(items))
    line = combo.lineEdit()
    if line is not None:
        line.setPlaceholderText(placeholder)
    return combo
