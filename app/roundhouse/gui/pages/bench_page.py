"""The Benchmark page: run a serving benchmark with live progress, keep, compare and export."""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import ValidationError
from PySide6.QtCore import QTimer
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.bench import (
    BenchList,
    BenchProgress,
    BenchResult,
    BenchState,
    ExportFormat,
    failure_lines,
    progress_words,
)
from roundhouse.api.gateway import GatewayModelList
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.bench import BenchCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.connection_state import ConnectionState
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.widgets.bench_ab import AbPanel
from roundhouse.gui.widgets.bench_chart import BenchChart
from roundhouse.gui.widgets.bench_form import BenchForm
from roundhouse.gui.widgets.bench_results import BenchResults
from roundhouse.gui.widgets.bench_table import BenchTable, run_title
from roundhouse.gui.widgets.confirm import ask_to_confirm
from roundhouse.gui.widgets.notice import Notice

# While a run goes, its elapsed time is repainted at this pace (a clock, not a request: the
# progress itself comes by the change feed, as the run's job moves).
REPAINT_MS = 250
_FILTERS = {
    ExportFormat.JSON: "JSON (*.json)",
    ExportFormat.CSV: "CSV (*.csv)",
    ExportFormat.MD: "Markdown (*.md)",
}


class BenchPage(QWidget):
    """The form and Run on top; the result (table, chart) and the kept results below."""

    title = "Benchmark"

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._calls = BenchCalls(bridge)
        # A call's failure without a handler of its own is said on the page's status line.
        self._ops = Ops(self, say=self.say)
        self.job: str | None = None
        self._started = 0.0
        self._progress: BenchProgress | None = None
        self.export_dialog: QFileDialog | None = None
        self.shown: list[BenchResult] = []
        self.confirm_box: QMessageBox | None = None

        self.form = BenchForm()
        self.run_button = QPushButton("Run")
        self.run_button.setProperty("primary", True)  # the accent's colours (app.qss)
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.progress_label = QLabel("")
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.ab = AbPanel(bridge, self.form)
        self.ab.finished.connect(self._on_ab_finished)
        self.ab.busy_changed.connect(self._update_actions)
        controls = QVBoxLayout()
        controls.addWidget(self.run_button)
        controls.addWidget(self.cancel_button)
        controls.addWidget(self.progress_label)
        controls.addWidget(self.ab)
        controls.addStretch(1)
        top = QHBoxLayout()
        top.addWidget(self.form, 1)
        top.addLayout(controls)

        self.table = BenchTable()
        self.chart = BenchChart()
        self.tabs = QTabWidget()
        self.tabs.addTab(self.table, "Table")
        self.tabs.addTab(self.chart, "Chart")
        # Above the result: any failure, grouped by reason, with what to change.
        self.failures = Notice(tone="warning")
        shown = QWidget()
        shown_layout = QVBoxLayout(shown)
        shown_layout.setContentsMargins(0, 0, 0, 0)
        shown_layout.addWidget(self.failures)
        shown_layout.addWidget(self.tabs, 1)

        self.results = BenchResults()
        self.results.itemSelectionChanged.connect(self._update_actions)
        self.results.itemDoubleClicked.connect(lambda _: self.show_selected())
        self.buttons: dict[str, QPushButton] = {}
        row = QHBoxLayout()
        for text, slot in (
            ("Refresh", self.refresh),
            ("Show", self.show_selected),
            ("Compare", self.show_selected),
            ("Export JSON…", lambda: self.ask_export(ExportFormat.JSON)),
            ("Export CSV…", lambda: self.ask_export(ExportFormat.CSV)),
            ("Export Markdown…", lambda: self.ask_export(ExportFormat.MD)),
            ("Delete…", self.ask_delete),
        ):
            button = QPushButton(text)
            button.clicked.connect(slot)
            row.addWidget(button)
            self.buttons[text] = button
        row.addStretch(1)
        kept = QWidget()
        kept_layout = QVBoxLayout(kept)
        kept_layout.setContentsMargins(0, 0, 0, 0)
        kept_layout.addWidget(QLabel("Kept results (select several to compare)"))
        kept_layout.addWidget(self.results, 1)
        kept_layout.addLayout(row)
        split = QSplitter()
        split.setOrientation(split.orientation().Vertical)
        split.addWidget(shown)
        split.addWidget(kept)

        heading = QLabel(self.title)
        heading.setObjectName("pageTitle")
        layout = QVBoxLayout(self)
        layout.addWidget(heading)
        layout.addLayout(top)
        layout.addWidget(self.status)
        layout.addWidget(split, 1)

        self._timer = QTimer(self)
        self._timer.setInterval(REPAINT_MS)
        self._timer.timeout.connect(self._repaint_progress)
        bridge.jobs_changed.connect(self._hear_progress)
        bridge.feed_reset.connect(self._ask_progress)
        # A model started, loaded or stopped anywhere shows in the picker at once.
        bridge.gateway_changed.connect(self._on_models_succeeded)
        bridge.when_connected(self.refresh)
        bridge.state_changed.connect(self._update_actions)
        self._update_actions()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.refresh()

    @property
    def busy(self) -> bool:
        return self.job is not None or self.ab.busy

    def _update_actions(self, *_: object) -> None:
        connected = self._bridge.state == ConnectionState.CONNECTED
        self.run_button.setEnabled(connected and not self.busy)
        self.cancel_button.setEnabled(self.busy)
        picked = len(self.results.selected_ids())
        self.buttons["Show"].setEnabled(picked == 1)
        self.buttons["Compare"].setEnabled(picked >= 2)
        for text in ("Export JSON…", "Export CSV…", "Export Markdown…"):
            self.buttons[text].setEnabled(picked == 1)
        self.buttons["Delete…"].setEnabled(picked >= 1)
        self.ab.set_enabled_by_page(connected and self.job is None)

    def say(self, text: str) -> None:
        self.status.setText(text)

    def _fail(self, failure: Failure) -> None:
        self.say(f"Could not {failure}")

    # -- lists ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """List the gateway's models and the kept results."""
        if self._bridge.state != ConnectionState.CONNECTED:
            return
        self._ops.run(self._calls.models(), self._on_models_succeeded)
        self._list_results()
        self.ab.refresh()

    def _list_results(self) -> None:
        """The kept results (not in the change feed: listed when a run ends or is deleted)."""
        listing = self._calls.results()
        self._ops.run(listing, self._on_results_succeeded, on_failure=self._fail)

    def _on_models_succeeded(self, listed: GatewayModelList) -> None:
        self.form.picker.set_models(listed, self.form.picker.current_model() or None)

    def _on_results_succeeded(self, listing: BenchList) -> None:
        self.results.set_results(listing)
        self._update_actions()

    # -- a run ----------------------------------------------------------------------------

    def run(self) -> None:
        self.say("")  # what the last action said no longer applies
        try:
            request = self.form.request()
        except ValidationError:
            self.say("Pick or type a model first: one the gateway serves or can start.")
            return
        call = self._calls.start(request)
        self._ops.run(call, self._on_started, on_failure=self._fail)
        self.run_button.setEnabled(False)
        call.failed.connect(lambda _: self._update_actions())

    def _on_started(self, progress: BenchProgress) -> None:
        self.job, self._started = progress.id, time.monotonic()
        self.say("")
        self._show_progress(progress)
        self._timer.start()
        self._update_actions()
        # The feed may have told its end before this answer came.
        self._hear_progress()

    def _hear_progress(self, *_: object) -> None:
        """The run's progress as the change feed last told it (its job's detail)."""
        progress = self._bridge.bench_progress(self.job) if self.job is not None else None
        if progress is not None:
            self._on_progress(progress)

    def _ask_progress(self) -> None:
        """After a reset of the feed (its events may have been missed): ask once."""
        if self.job is not None:
            call = self._calls.progress(self.job)
            self._ops.run(call, self._on_progress, on_failure=self._fail)

    def _show_progress(self, progress: BenchProgress) -> None:
        self._progress = progress
        self._repaint_progress()

    def _repaint_progress(self) -> None:
        if self._progress is None:
            return
        elapsed = time.monotonic() - self._started
        done, total, failed = self._progress.done, self._progress.total, self._progress.failed
        self.progress_label.setText(f"{progress_words(done, total, failed)} · {elapsed:.1f} s")

    def _on_progress(self, progress: BenchProgress) -> None:
        if progress.id != self.job:
            return
        self._show_progress(progress)
        if progress.state is BenchState.RUNNING:
            return
        self._timer.stop()
        self.job = None
        self._update_actions()
        if progress.state is BenchState.DONE or progress.kept:
            # A run whose requests all failed is kept too: shown with its reasons above it.
            self.show_ids([progress.id])
            self._list_results()
        else:
            self.say(progress.error or f"The benchmark was {progress.state.value}.")

    def cancel(self) -> None:
        if self.job is not None:
            self._calls.cancel(self.job).failed.connect(self._fail)
        self.ab.cancel()

    def _on_ab_finished(self, ids: list[str]) -> None:
        self.show_ids(ids)
        self._list_results()
        self._update_actions()

    # -- showing, comparing ---------------------------------------------------------------

    def show_selected(self) -> None:
        self.show_ids(self.results.selected_ids())

    def show_ids(self, ids: list[str]) -> None:
        """Fetch the results and show them side by side (in this order), table and chart."""
        fetched: dict[str, BenchResult] = {}

        def got(result: BenchResult) -> None:
            fetched[result.id] = result
            if len(fetched) == len(ids):
                self.shown = [fetched[i] for i in ids]
                self.table.show_results(self.shown)
                self.chart.show_results(self.shown)
                self._show_failures()

        for bench_id in ids:
            call = self._calls.result(bench_id)
            self._ops.run(call, got, on_failure=self._fail)

    def _show_failures(self) -> None:
        """The banner over the shown runs: each one with failures, its reasons and advice."""
        with_failures = [r for r in self.shown if r.metrics.failed]
        if not with_failures:
            self.failures.hide()
            return
        if len(self.shown) == 1:
            lines = failure_lines(with_failures[0])
            self.failures.show_lines(lines[0], lines[1:])
            return
        lines = []
        for result in with_failures:
            said = failure_lines(result)
            lines.append(f"{run_title(result)}: {said[0]}")
            lines.extend(f"    {line}" for line in said[1:])
        self.failures.show_lines(
            f"{len(with_failures)} of the {len(self.shown)} runs had failed requests.", lines
        )

    # -- export, delete -------------------------------------------------------------------

    def ask_export(self, fmt: ExportFormat) -> None:
        ids = self.results.selected_ids()
        if len(ids) != 1:
            return
        dialog = QFileDialog(self, "Export the benchmark result")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setOption(QFileDialog.Option.DontUseNativeDialog)
        dialog.setNameFilter(_FILTERS[fmt])
        dialog.setDefaultSuffix(fmt.value)
        dialog.selectFile(f"bench-{ids[0]}.{fmt.value}")
        dialog.fileSelected.connect(lambda path: self.export_to(ids[0], fmt, Path(path)))
        dialog.finished.connect(dialog.deleteLater)
        self.export_dialog = dialog
        dialog.open()  # never exec(): a nested loop would stall the daemon calls

    def export_to(self, bench_id: str, fmt: ExportFormat, path: Path) -> None:
        def write(text: str) -> None:
            try:
                path.write_text(text, encoding="utf-8")
            except OSError as exc:
                self.say(f"Could not write {path}: {exc.strerror or exc}. Pick another place.")
                return
            self.say(f"Saved {path}")

        call = self._calls.export(bench_id, fmt)
        self._ops.run(call, write, on_failure=self._fail)

    def ask_delete(self) -> None:
        ids = self.results.selected_ids()
        if not ids:
            return
        self.confirm_box = ask_to_confirm(
            self,
            title="Delete benchmark results",
            text=f"Delete {len(ids)} benchmark result{'s' if len(ids) > 1 else ''}?",
            detail="Deleted results cannot be brought back. Export them first to keep a copy.",
            action="Delete",
            on_confirm=lambda: self.delete(ids),
            on_closed=lambda: setattr(self, "confirm_box", None),
        )

    def delete(self, ids: list[str]) -> None:
        for bench_id in ids:
            self._ops.run(
                self._calls.delete(bench_id),
                lambda _: self._list_results(),
                on_failure=self._fail,
            )
