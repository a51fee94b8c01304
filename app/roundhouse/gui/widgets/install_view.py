"""One engine's install, live: the stage, bytes and rate, the chosen build, pip's output.

The install is a job of the daemon's job board: its changes come by the change feed (the
bridge's store holds every job, an install's own shape inside), not by a stream of its own.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.engines import EngineId
from roundhouse.api.installs import InstallJob, InstallProgress, InstallRequest, JobState
from roundhouse.api.jobs import JobKind
from roundhouse.base.units import format_bytes
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge

# The view repaints from the latest job at most this often (a download reports per chunk).
REPAINT_MS = 250
BAR_STEPS = 1000


def bytes_in_words(progress: InstallProgress) -> str:
    """'12.0 MiB of 40.0 MiB at 5.1 MiB/s' (parts missing when the daemon does not know)."""
    done = format_bytes(progress.done_bytes or 0)
    words = f"{done} of {format_bytes(progress.total_bytes)}" if progress.total_bytes else done
    if progress.rate_bps:
        words += f" at {format_bytes(progress.rate_bps)}/s"
    return words


def stage_in_words(progress: InstallProgress | None) -> str:
    """The daemon's words for the stage, with the bytes while it downloads."""
    if progress is None:
        return "Starting…"
    if progress.total_bytes:
        return f"{progress.message}: {bytes_in_words(progress)}"
    return progress.message


def outcome_in_words(job: InstallJob) -> str:
    """What an ended job did, in one sentence."""
    match job.state:
        case JobState.DONE if job.build is not None:
            backend = f" ({job.build.backend.value} build)" if job.build.backend else ""
            return f"Installed llama.cpp {job.build.tag}{backend}."
        case JobState.DONE if job.venv is not None:
            version = f" {job.venv.version}" if job.venv.version else ""
            return f"Installed {job.venv.package}{version} in {job.venv.venv_dir}."
        case JobState.DONE:
            return "Installed."
        case JobState.FAILED:
            return f"The install failed: {job.error or 'no reason given'}"
        case JobState.CANCELLED:
            return job.error or "Cancelled."
        case _:
            return job.progress.message if job.progress else "Starting…"


class InstallView(QWidget):
    """Hidden until an install starts; stays with its outcome once it ended."""

    ended = Signal(object)  # InstallJob: done, failed or cancelled

    def __init__(self, bridge: DaemonBridge, engine: EngineId, parent: QWidget | None = None):
        super().__init__(parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self.engine = engine
        self.job: InstallJob | None = None
        # The job is followed (through the store) from `attach` until it ends.
        self._following = False
        self._start_call: Call | None = None
        self._ended_id: str | None = None
        self._cancel_call: Call | None = None
        self.stage = QLabel()
        self.stage.setWordWrap(True)
        self.stage.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.bar = QProgressBar()
        self.bar.setTextVisible(True)
        self.plan = QLabel()
        self.plan.setWordWrap(True)
        self.plan.setObjectName("installPlan")
        self.plan.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setObjectName("dialogError")
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop the install; a download resumes at the next one")
        self.cancel_button.clicked.connect(self.cancel)
        self.output_button = QToolButton()
        self.output_button.setCheckable(True)
        self.output_button.setAutoRaise(True)
        self.output_button.setStyleSheet("QToolButton { border: none; }")
        self.output_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.output_button.setArrowType(Qt.ArrowType.RightArrow)
        self.output_button.toggled.connect(self._on_output_button_toggled)
        self.output = QPlainTextEdit()
        self.output.setReadOnly(True)
        self.output.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.output.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.output.setFixedHeight(130)
        self.output.hide()

        bar_row = QHBoxLayout()
        bar_row.setContentsMargins(0, 0, 0, 0)
        bar_row.addWidget(self.bar, 1)
        bar_row.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        layout.setSpacing(4)
        layout.addWidget(self.stage)
        layout.addLayout(bar_row)
        layout.addWidget(self.plan)
        layout.addWidget(self.error)
        layout.addWidget(self.output_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.output)

        self._repaint = QTimer(self)
        self._repaint.setSingleShot(True)
        self._repaint.setInterval(REPAINT_MS)
        self._repaint.timeout.connect(self._paint)
        bridge.jobs_changed.connect(self._hear)
        bridge.feed_reset.connect(self._on_feed_reset)
        self.hide()

    @property
    def running(self) -> bool:
        """An install was asked for or is followed, and has not ended."""
        if self._start_call is not None:
            return True
        if self.job is not None and self.job.state != JobState.RUNNING:
            return False
        return self._following

    def install(self, request: InstallRequest) -> None:
        """Ask the daemon to install the engine, then follow the job."""
        if self.running:
            return
        self.job = None
        self._show_text(f"Asking the daemon to install {self.engine.value}…")
        self.bar.setRange(0, 0)
        self.cancel_button.setEnabled(False)
        self._start_call = call = self._bridge.installs.start(self.engine, request)
        self._ops.run(call, self.attach, on_failure=self._on_start_failed)

    def attach(self, job: InstallJob) -> None:
        """Follow a job (one this view started, or one already running on the daemon)."""
        self._start_call = None
        self.job = job
        self._following = True
        self._paint()
        # The feed may have told more (or its end) before this answer came.
        self._hear()

    def cancel(self) -> None:
        if self.job is None or self.job.state != JobState.RUNNING or self._cancel_call:
            return
        self.cancel_button.setEnabled(False)
        self.stage.setText("Cancelling…")
        self._cancel_call = call = self._bridge.installs.cancel(self.job.id)
        call.failed.connect(self._on_cancel_failed)
        call.finished.connect(self._on_cancel_finished)

    def output_lines(self) -> list[str]:
        return self.output.toPlainText().splitlines()

    # -- painting -----------------------------------------------------------------------

    def _paint(self) -> None:
        job = self.job
        if job is None:
            return
        self.show()
        ended = job.state != JobState.RUNNING
        progress = job.progress
        failed = job.state == JobState.FAILED
        if not ended:
            self.stage.setText(stage_in_words(progress))
        else:
            self.stage.setText(outcome_in_words(job))
        # A failure is said once, in the error box below.
        self.stage.setVisible(not failed)
        self._paint_bar(job, progress)
        self.cancel_button.setVisible(not ended)
        self.cancel_button.setEnabled(not ended and self._cancel_call is None)
        self.plan.setText(f"Chosen: {job.plan}" if job.plan else "")
        self.plan.setVisible(bool(job.plan))
        self.error.setText(outcome_in_words(job) if failed else "")
        self.error.setVisible(failed)
        self._paint_output(job)

    def _paint_bar(self, job: InstallJob, progress: InstallProgress | None) -> None:
        if job.state != JobState.RUNNING:
            self.bar.hide()
            return
        self.bar.show()
        if progress is not None and progress.total_bytes:
            self.bar.setRange(0, BAR_STEPS)
            share = (progress.done_bytes or 0) / progress.total_bytes
            self.bar.setValue(int(min(1.0, share) * BAR_STEPS))
            self.bar.setFormat("%p%")
        else:
            # No size known (pip, unpacking): a busy bar, the stage says what happens.
            self.bar.setRange(0, 0)
            self.bar.setFormat("")

    def _paint_output(self, job: InstallJob) -> None:
        self.output_button.setVisible(bool(job.lines))
        if not job.lines:
            self.output.hide()
            return
        kept = "" if len(job.lines) == job.line_count else f", the last {len(job.lines)}"
        self.output_button.setText(f"pip's output ({job.line_count} lines{kept})")
        if job.state == JobState.FAILED and not self.output_button.isChecked():
            # A failure shows pip's last lines: they usually say why.
            self.output_button.setChecked(True)
        text = "\n".join(job.lines)
        if self.output.toPlainText() != text:
            self.output.setPlainText(text)
            bar = self.output.verticalScrollBar()
            bar.setValue(bar.maximum())

    def _show_text(self, text: str) -> None:
        self.show()
        self.stage.setText(text)
        self.stage.show()
        self.bar.show()
        self.plan.hide()
        self.error.hide()
        self.output_button.hide()
        self.output.hide()
        self.cancel_button.show()

    # -- answers ------------------------------------------------------------------------

    def _hear(self, *_: object) -> None:
        """The job as the change feed last told it (its install shape in the job's view)."""
        job = self.job
        heard = self._bridge.jobs.get(job.id) if job is not None and self._following else None
        if heard is not None and heard.kind == JobKind.INSTALL and heard.detail is not None:
            self._take(InstallJob.model_validate(heard.detail))

    def _on_feed_reset(self) -> None:
        """Changes may have been missed (the daemon restarted): ask for the job once."""
        job = self.job
        if job is not None and self._following:
            call = self._bridge.installs.job(job.id)
            self._ops.run(call, self._take, on_failure=self._on_job_lost)

    def _on_job_lost(self, failure: Failure) -> None:
        self._following = False
        self._repaint.stop()
        self._show_failure(f"Lost track of the install: {failure}")

    def _take(self, job: InstallJob) -> None:
        if self.job is None or job.id != self.job.id or not self._following:
            return
        self.job = job
        if job.state != JobState.RUNNING:
            self._following = False
            self._repaint.stop()
            self._paint()
            self._emit_ended(job)
        elif not self._repaint.isActive():
            self._repaint.start()

    def _emit_ended(self, job: InstallJob) -> None:
        # Once per job.
        if self._ended_id != job.id:
            self._ended_id = job.id
            self.ended.emit(job)

    def _on_start_failed(self, failure: Failure) -> None:
        self._start_call = None
        self._show_failure(f"The install did not start: {failure}")
        self.ended.emit(None)

    def _on_cancel_failed(self, failure: Failure) -> None:
        self.stage.setText(f"Not cancelled: {failure}")

    def _on_cancel_finished(self) -> None:
        self._cancel_call = None

    def _show_failure(self, text: str) -> None:
        self.show()
        self.stage.setText("")
        self.bar.hide()
        self.cancel_button.hide()
        self.error.setText(text)
        self.error.show()

    def _on_output_button_toggled(self, checked: bool) -> None:
        arrow = Qt.ArrowType.DownArrow if checked else Qt.ArrowType.RightArrow
        self.output_button.setArrowType(arrow)
        self.output.setVisible(checked)
