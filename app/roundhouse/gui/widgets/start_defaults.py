"""The start dialog's filled-in values: the context, slots, GPU layers and threads llama-server
will run a GGUF file with on this machine, from the fit estimate and the engine's defaults."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject, QTimer, Signal

from roundhouse.api.engines import EngineId
from roundhouse.api.fit import DeviceKind, FitEngine, FitOptions, FitQuery, ModelFit, start_context
from roundhouse.api.hardware import CpuInfo
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge

# Typing a path fires a change per character: ask once the user pauses.
SETTLE_MS = 300


@dataclass(frozen=True)
class StartValues:
    """What the dialog fills in (llama-server's -c, -np, -ngl, -t) and why, in words."""

    ctx_size: int
    parallel: int
    gpu_layers: int
    threads: int | None
    words: str


def start_values(fit: ModelFit, cpu: CpuInfo | None) -> StartValues:
    """The values of a start sized by `fit` (one slot, as the gateway's own starts): the
    context the estimate chose, its GPU layers, and llama-server's own thread count (the
    physical cores, which it counts itself when -t is not given)."""
    report = fit.report
    context, lowered = start_context(report)
    slots = report.n_parallel
    has_gpu = any(device.kind == DeviceKind.GPU for device in report.devices)
    if not has_gpu:
        layers = "no GPU layers (this machine has no GPU the engine can use)"
    elif report.gpu_layers == 0:
        layers = "no GPU layers (the model does not fit on the GPU)"
    elif report.gpu_layers >= report.total_layers:
        layers = f"all {report.total_layers} layers on the GPU"
    else:
        layers = f"{report.gpu_layers} of {report.total_layers} layers on the GPU"
    threads = (cpu.physical_cores or cpu.logical_cores) if cpu is not None else None
    thread_words = f", {threads} threads (the CPU's cores)" if threads else ""
    why = (
        f" (lowered from {report.context_length:,} to fit)"
        if lowered and context != report.context_length
        else " (the model's own, at most 8,192)"
    )
    words = (
        f"Filled in for this machine: a {context * slots:,}-token context{why}, "
        f"{slots} slot{'s' if slots != 1 else ''}, {layers}{thread_words}. "
        "Change any of them to override."
    )
    return StartValues(
        ctx_size=context * slots,
        parallel=slots,
        gpu_layers=report.gpu_layers,
        threads=threads,
        words=words,
    )


class StartDefaults(QObject):
    """Asks the estimate for a local GGUF file chosen for llama.cpp; `ready(StartValues)` once
    it answers, `unknown(str)` when it cannot size the file. An answer for a file no longer
    chosen is dropped."""

    ready = Signal(object)  # StartValues
    unknown = Signal(str)

    def __init__(self, bridge: DaemonBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._calls = ModelsCalls(bridge)
        self._ops = Ops(self)
        self._model = ""
        self.values: StartValues | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SETTLE_MS)
        self._timer.timeout.connect(self._ask)

    def update_for(self, engine: EngineId | None, model: str) -> bool:
        """Size `model` for `engine` (only llama.cpp and a .gguf file are sized); whether that
        is another file than the last (the values shown for it no longer hold)."""
        model = model if engine == EngineId.LLAMA_CPP and model.lower().endswith(".gguf") else ""
        if model == self._model:
            return False
        self._model = model
        self._ops.forget("fit")
        self.values = None
        if model:
            self._timer.start()
        else:
            self._timer.stop()
        return True

    def _ask(self) -> None:
        if not self._model:
            return
        # One slot, the estimate's context and layers: what the Library's own starts use.
        query = FitQuery(
            path=self._model, options=FitOptions(engine=FitEngine.LLAMA_CPP, n_parallel=1)
        )
        # An answer for a file no longer chosen is dropped: the latest question wins.
        # A failure is this object's own to tell: `unknown` carries it to the dialog's words.
        self._ops.run(
            self._calls.fit(query),
            self._on_fit_succeeded,
            on_failure=self._on_fit_failed,
            latest="fit",
        )

    def _on_fit_succeeded(self, fit: ModelFit) -> None:
        inventory = self._bridge.inventory
        self.values = start_values(fit, inventory.cpu if inventory is not None else None)
        self.ready.emit(self.values)

    def _on_fit_failed(self, failure: Failure) -> None:
        self.unknown.emit(failure.detail)
