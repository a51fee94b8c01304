"""A/B in one click: the form's workload on one model, on two engines, back to back."""

from __future__ import annotations

from pydantic import ValidationError
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QLabel, QPushButton, QWidget

from roundhouse.api.bench import (
    AbProgress,
    AbRequest,
    BenchState,
    ab_engines,
    loads,
    progress_words,
)
from roundhouse.api.engines import EngineId, EnginesOverview
from roundhouse.api.library import LibraryList, LibraryModel
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.bench import BenchCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.widgets.bench_form import BenchForm


class AbPanel(QGroupBox):
    """Engine and model for A and B; `finished(result_ids)` when both arms have run."""

    finished = Signal(list)
    busy_changed = Signal()

    def __init__(self, bridge: DaemonBridge, form: BenchForm, parent: QWidget | None = None):
        super().__init__("A/B: one model, two engines", parent)
        self._bridge = bridge
        self._calls = BenchCalls(bridge)
        self._form = form
        self.job: str | None = None
        self._page_allows = False
        self.library: list[LibraryModel] = []
        self.engine_a, self.engine_b = QComboBox(), QComboBox()
        self.model_a, self.model_b = QComboBox(), QComboBox()
        self.run_button = QPushButton("Run A/B")
        self.run_button.clicked.connect(self.run)
        self.state = QLabel("")
        self.state.setWordWrap(True)
        # The section's own line says why a call failed, in the words of what it asked.
        self._ops = Ops(self, say=self.state.setText)
        layout = QFormLayout(self)
        layout.addRow("Engine A", self.engine_a)
        layout.addRow("Model A", self.model_a)
        layout.addRow("Engine B", self.engine_b)
        layout.addRow("Model B", self.model_b)
        layout.addRow(self.run_button)
        layout.addRow(self.state)
        self.engine_a.currentIndexChanged.connect(lambda _: self._fill_models())
        self.engine_b.currentIndexChanged.connect(lambda _: self._fill_models())
        # Its progress comes by the change feed, as the run's job moves.
        bridge.jobs_changed.connect(self._hear_progress)
        bridge.feed_reset.connect(self._ask_progress)
        bridge.engines_changed.connect(self._on_engines)
        # A model imported or deleted anywhere shows in the model lists at once.
        bridge.library_changed.connect(self._on_library)
        self._update()

    @property
    def busy(self) -> bool:
        return self.job is not None

    def refresh(self) -> None:
        # The engines come by the change feed (engines_changed) once detected.
        if self._bridge.engines is not None:
            self._on_engines(self._bridge.engines)
        self._ops.run(self._calls.library(), self._on_library)

    def set_enabled_by_page(self, allowed: bool) -> None:
        self._page_allows = allowed
        self._update()

    def _engines(self) -> list[EngineId]:
        overview = self._bridge.engines
        return ab_engines(overview) if overview is not None else []

    def _on_engines(self, overview: EnginesOverview) -> None:
        engines = ab_engines(overview)
        for combo, pick in ((self.engine_a, 0), (self.engine_b, 1)):
            current = combo.currentData()
            combo.blockSignals(True)
            combo.clear()
            for engine in engines:
                combo.addItem(engine.value, engine)
            index = combo.findData(current)
            combo.setCurrentIndex(index if index >= 0 else min(pick, combo.count() - 1))
            combo.blockSignals(False)
        self._fill_models()

    def _on_library(self, listed: LibraryList) -> None:
        self.library = [m for m in listed.models if m.path is not None]
        self._fill_models()

    @staticmethod
    def _engine(combo: QComboBox) -> EngineId | None:
        # Qt hands a StrEnum back as its plain string.
        data = combo.currentData()
        return EngineId(data) if data else None

    def _fill_models(self) -> None:
        overview = self._bridge.engines
        for engine_combo, combo in ((self.engine_a, self.model_a), (self.engine_b, self.model_b)):
            engine = self._engine(engine_combo)
            current = combo.currentData()
            combo.clear()
            if overview is not None and engine is not None:
                for model in self.library:
                    if loads(overview, engine, model.format):
                        combo.addItem(model.name, model.path)
            index = combo.findData(current)
            if index >= 0:
                combo.setCurrentIndex(index)
        self._update()

    def _why_not(self) -> str | None:
        engines = self._engines()
        if len(engines) < 2:
            found = ", ".join(e.value for e in engines) or "none"
            return (
                "An A/B needs two engines installed that can load a local model "
                f"(llama.cpp, MLX, vLLM or SGLang); found: {found}. Install one on the "
                "Engines page."
            )
        if self._engine(self.engine_a) == self._engine(self.engine_b):
            return "Pick two different engines."
        if not self.model_a.currentData() or not self.model_b.currentData():
            return "Each engine needs a local model in a format it loads (see the Models page)."
        return None

    def _update(self) -> None:
        why = self._why_not()
        self.run_button.setEnabled(why is None and self._page_allows and self.job is None)
        self.run_button.setToolTip(
            why or "Start each engine in turn (stopping the first), run the same workload"
        )

    def run(self) -> None:
        model_a, model_b = self.model_a.currentData(), self.model_b.currentData()
        a, b = self._engine(self.engine_a), self._engine(self.engine_b)
        if a is None or b is None or not model_a or not model_b:
            return
        context = self._form.input_len.value() + self._form.output_len.value() + 64
        try:
            request = AbRequest(
                model=model_a,
                engines=[a.value, b.value],
                models={a.value: model_a, b.value: model_b},
                ctx_size=min(max(512, context), 1_000_000),
                workload=self._form.request(model=model_a),
            )
        except ValidationError as exc:
            self.state.setText(f"Cannot run this A/B: {exc.errors()[0]['msg']}")
            return
        call = self._calls.start_ab(request)
        self._ops.run(call, self._on_started, on_failure=self._fail)

    def cancel(self) -> None:
        if self.job is not None:
            self._calls.cancel_ab(self.job).failed.connect(self._fail)

    def _fail(self, failure: Failure) -> None:
        self.state.setText(f"Could not {failure}")

    def _on_started(self, progress: AbProgress) -> None:
        self.job = progress.id
        self._show(progress)
        self._update()
        self.busy_changed.emit()
        # The feed may have told its end before this answer came.
        self._hear_progress()

    def _hear_progress(self, *_: object) -> None:
        """The run's progress as the change feed last told it (its job's detail)."""
        progress = self._bridge.ab_progress(self.job) if self.job is not None else None
        if progress is not None:
            self._on_progress(progress)

    def _ask_progress(self) -> None:
        """After a reset of the feed (its events may have been missed): ask once."""
        if self.job is not None:
            call = self._calls.ab_progress(self.job)
            self._ops.run(call, self._on_progress, on_failure=self._fail)

    def _show(self, progress: AbProgress) -> None:
        counts = progress_words(progress.done, progress.total, progress.failed)
        self.state.setText(f"{progress.stage}: {counts}")

    def _on_progress(self, progress: AbProgress) -> None:
        if progress.id != self.job:
            return
        self._show(progress)
        if progress.state is BenchState.RUNNING:
            return
        self.job = None
        self._update()
        self.busy_changed.emit()
        if progress.state is BenchState.DONE and progress.warnings:
            # Never a plain "Done" over failed requests: each arm with failures is named.
            self.state.setText(
                "Done, with failed requests (see the reasons above the table): "
                + "; ".join(progress.warnings)
            )
            self.finished.emit(progress.result_ids)
        elif progress.state is BenchState.DONE:
            self.state.setText("Done: the two runs are side by side below.")
            self.finished.emit(progress.result_ids)
        else:
            self.state.setText(progress.error or f"The A/B run was {progress.state.value}.")
