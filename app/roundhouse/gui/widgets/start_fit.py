"""The start dialog's "will it fit" line: the estimate for the file and options being chosen,
and, split across paired machines, the layers each would hold."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QWidget

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.fit import FitQuery, FitVerdict, ModelFit
from roundhouse.api.peers import PeerState, PeersView
from roundhouse.api.rpc import MachineMemory, SplitProposal, SplitQuery
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.calls.peers import PeersCalls
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.theme.roles import set_tone
from roundhouse.gui.widgets.models_words import Tone, fit_badge

# Typing a context size fires a change per digit: ask once the user pauses.
SETTLE_MS = 400
# A paired machine whose free memory is not known yet is asked again, a few times.
NOT_TOLD = "has not said what it has free"
RETRIES = 5
RETRY_MS = 1000


class StartFitLine(QLabel):
    """Hidden until there is a local GGUF for llama.cpp; then its verdict, the summary and
    the first advice, with the breakdown in the tooltip."""

    fitted = Signal(object)  # the ModelFit shown, or None when there is none (ADR 48)

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._calls = ModelsCalls(bridge)
        self._peers = PeersCalls(bridge)
        self._ops = Ops(self)
        self._query: FitQuery | None = None
        # The paired machines to split across (llama.cpp's RPC, ADR 40); the fit is this
        # machine's either way.
        self._across: tuple[str, ...] = ()
        self._fit_text = ""
        self._retries = 0
        # Whether the last verdict is shown in the usual text colour (not a warning).
        self.neutral = False
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.hide()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SETTLE_MS)
        self._timer.timeout.connect(self._ask)

    def update_for(self, engine: EngineId | None, options: InstanceOptions) -> None:
        model = (options.model or "").strip()
        if engine != EngineId.LLAMA_CPP or not model.lower().endswith(".gguf"):
            self._query = None
            self._timer.stop()
            self.hide()
            self.fitted.emit(None)
            return
        query = FitQuery(path=model, instance=options.model_copy(update={"across": ()}))
        if query != self._query or options.across != self._across:
            self._query = query
            self._across = options.across
            self._timer.start(SETTLE_MS)

    def _ask(self) -> None:
        if self._query is None:
            return
        # An answer to an older question (the options changed since) is dropped.
        self._ops.run(
            self._calls.fit(self._query),
            self._on_fit_succeeded,
            on_failure=self._on_fit_failed,
            latest="fit",
        )

    def _on_fit_succeeded(self, fit: ModelFit) -> None:
        badge = fit_badge(fit.report)
        advice = fit.report.advice[0].text if fit.report.advice else ""
        if fit.report.verdict == FitVerdict.DOES_NOT_FIT and not self._across:
            advice = (
                f"{advice} It can borrow paired machines' memory: name them in Split "
                "across machines."
            ).strip()
        self._fit_text = "  ".join(t for t in (fit.report.summary, advice) if t)
        self.setText(self._fit_text)
        self.setToolTip(badge.tooltip)
        # The CPU is the only place a model can run on a machine without a GPU: that is
        # no warning, so the line keeps the usual text colour.
        neutral = badge.tone == Tone.NEUTRAL
        set_tone(self, None if neutral else badge.tone.value)
        self.neutral = neutral
        self.show()
        self.fitted.emit(fit)
        if self._across and self._query is not None:
            self._ops.run(
                self._peers.machines(),
                self._on_machines,
                on_failure=self._on_split_failed,
                latest="fit",
            )

    def _on_machines(self, view: PeersView) -> None:
        workers, missing = across_memory(self._across, view)
        if missing:
            self._add(missing)
            if NOT_TOLD in missing and self._retries < RETRIES:
                # Just paired, or its feed not followed yet: it tells within seconds.
                self._retries += 1
                self._timer.start(RETRY_MS)
            return
        self._retries = 0
        if self._query is None:
            return
        self._ops.run(
            self._calls.split(SplitQuery(fit=self._query, workers=workers)),
            self._on_split,
            on_failure=self._on_split_failed,
            latest="fit",
        )

    def _on_split(self, proposal: SplitProposal) -> None:
        self._add("  ".join(t for t in (proposal.summary, proposal.slower) if t))

    def _on_split_failed(self, failure: Failure) -> None:
        self._add(f"No split proposed: {failure.detail}")

    def _add(self, text: str) -> None:
        self.setText(f"{self._fit_text}\n{text}" if self._fit_text else text)

    def _on_fit_failed(self, failure: Failure) -> None:
        self.fitted.emit(None)
        self.setText(f"No fit estimate: {failure.detail}")
        self.setToolTip("")
        set_tone(self, Tone.UNKNOWN.value)
        self.show()


def machine_free(state: PeerState | None) -> int | None:
    """What a paired machine has free for a share of the model: its GPUs' free memory, or
    its available RAM when it has no GPU (rpc-server then offers its CPU); None: not told."""
    hardware = state.hardware if state is not None else None
    if hardware is None:
        return None
    gpus = [g.memory_free_bytes for g in hardware.gpus if g.memory_free_bytes]
    return sum(gpus) if gpus else hardware.memory.available_bytes


def across_memory(names: tuple[str, ...], view: PeersView) -> tuple[list[MachineMemory], str]:
    """Each named paired machine's free memory as last told, in order; or, in words, which
    name is no paired machine or has not told it yet."""
    states = {seen.id: seen.state for seen in view.seen}
    workers: list[MachineMemory] = []
    for name in names:
        peer = next(
            (p for p in view.peers if p.id == name or p.name.casefold() == name.casefold()),
            None,
        )
        if peer is None:
            known = ", ".join(sorted(p.name for p in view.peers)) or "none yet"
            return [], f"'{name}' is not a paired machine (paired: {known})."
        free = machine_free(states.get(peer.id))
        if free is None:
            return [], f"{peer.name} {NOT_TOLD}: no split proposed yet."
        workers.append(MachineMemory(address=peer.name, free_bytes=free))
    return workers, ""
