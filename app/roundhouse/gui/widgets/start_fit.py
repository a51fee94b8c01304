"""The start dialog's "will it fit" line: the estimate for the file and options being chosen."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QLabel, QWidget

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.fit import FitQuery, ModelFit
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.widgets.models_words import Tone, fit_badge

# Typing a context size fires a change per digit: ask once the user pauses.
SETTLE_MS = 400
_COLOURS = {Tone.GOOD: "#1e7d32", Tone.WARN: "#a15c00", Tone.BAD: "#b3261e", Tone.UNKNOWN: "#666"}


class StartFitLine(QLabel):
    """Hidden until there is a local GGUF for llama.cpp; then its verdict, the summary and
    the first advice, with the breakdown in the tooltip."""

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._calls = ModelsCalls(bridge)
        self._ops = Ops(self)
        self._query: FitQuery | None = None
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
            return
        query = FitQuery(path=model, instance=options)
        if query != self._query:
            self._query = query
            self._timer.start()

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
        self.setText("  ".join(t for t in (fit.report.summary, advice) if t))
        self.setToolTip(badge.tooltip)
        # The CPU is the only place a model can run on a machine without a GPU: that is
        # no warning, so the line keeps the usual text colour.
        neutral = badge.tone == Tone.NEUTRAL
        self.setStyleSheet("" if neutral else f"color: {_COLOURS.get(badge.tone, '#666')};")
        self.neutral = neutral
        self.show()

    def _on_fit_failed(self, failure: Failure) -> None:
        self.setText(f"No fit estimate: {failure.detail}")
        self.setToolTip("")
        self.setStyleSheet(f"color: {_COLOURS[Tone.UNKNOWN]};")
        self.show()
