"""An instance's output, live: reads the new lines (`since`) when the change feed says its
count moved; a restart (a new `generation`, numbered from 0 again) is marked and read from
its start."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFontDatabase, QHideEvent, QShowEvent, QTextCursor
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.instances import InstanceInfo, InstanceLogs, InstanceStatus, LogCount
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.widgets.instances_model import model_name, status_in_words

# Lines kept in the view; older ones scroll out (the daemon's log file keeps everything).
MAX_LINES = 5000
# Lines asked for at once: a backlog arrives in a few quick requests, then one request
# each time the change feed says the engine wrote more (at most four times a second).
FETCH_LIMIT = 1000
# After a failed request: ask again later.
RETRY_MS = 3000


class LogDialog(QDialog):
    """Keeps the view at the end while it is there; a user who scrolled up stays put."""

    def __init__(self, bridge: DaemonBridge, info: InstanceInfo, parent: QWidget | None = None):
        super().__init__(parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self.instance_id = info.id
        self._info = info
        self._since = 0
        # Which process of the instance the lines come from; None before the first answer.
        self._generation: int | None = None
        self.restarts_seen = 0
        self._call: Call | None = None
        self._following = False
        self.gone = False
        # The instance left the store's list: the next read is to hear the daemon say so.
        self._unlisted = False
        self.setWindowTitle(f"Log of {info.engine.value}: {model_name(info.model)}")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
        self.resize(900, 560)

        self.header = QLabel()
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.setObjectName("logNote")
        self.note.hide()
        self.view = QPlainTextEdit()
        self.view.setReadOnly(True)
        self.view.setMaximumBlockCount(MAX_LINES)
        self.view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.view.setPlaceholderText("No output yet.")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        self.end_button = QPushButton("Go to end")
        self.end_button.setToolTip("Scroll to the newest line and follow from there")
        self.end_button.clicked.connect(self.scroll_to_end)
        buttons.addButton(self.end_button, QDialogButtonBox.ButtonRole.ActionRole)
        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addWidget(self.note)
        layout.addWidget(self.view, 1)
        layout.addWidget(buttons)

        # Only a retry after a failure waits on a clock; new lines are heard of by the feed.
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._fetch)
        bridge.instances_changed.connect(self._on_bridge_instances_changed)
        bridge.log_counts_changed.connect(self._fetch_if_more)
        # The counts may be stale after a reset: read whatever is new once.
        bridge.feed_reset.connect(self._fetch)
        self._show_info(info)

    # -- what tests and the page use ----------------------------------------------------

    def lines(self) -> list[str]:
        return self.view.toPlainText().splitlines()

    def at_end(self) -> bool:
        bar = self.view.verticalScrollBar()
        return bar.value() >= bar.maximum()

    def scroll_to_end(self) -> None:
        bar = self.view.verticalScrollBar()
        bar.setValue(bar.maximum())

    # -- following ----------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._following and not self.gone:
            self._following = True
            self._fetch()

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        self._following = False
        self._timer.stop()

    def _fetch(self) -> None:
        if self._call is not None or not self._following:
            return
        self._call = call = self._bridge.instance_logs(
            self.instance_id, since=self._since, limit=FETCH_LIMIT
        )
        self._ops.run(call, self._on_logs_succeeded, on_failure=self._on_logs_failed)

    def _on_logs_succeeded(self, logs: InstanceLogs) -> None:
        self._call = None
        if self._generation is not None and logs.generation != self._generation:
            # The engine started again: its lines are numbered from 0 again, so these (after
            # the old process's `since`) would skip the new one's first lines. Read from 0.
            self._generation = logs.generation
            self._mark_restart()
            if self._since != 0:
                self._since = 0
                self._schedule(0)
                return
        self._generation = logs.generation
        if logs.truncated:
            where = f" The whole log is in {logs.path}." if logs.path else ""
            self._show_note(
                "Some lines were dropped before these: the daemon keeps only the latest ones "
                f"in memory.{where}"
            )
        first = self._since == 0 and self.view.document().isEmpty()
        self._since = logs.next
        self.append(logs.lines)
        exit_info = self._info.last_exit
        if first and not logs.lines and exit_info is not None and exit_info.log_tail:
            # Nothing kept in memory (an engine an earlier daemon ran): its last lines then.
            self._show_note("The engine's last lines, as recorded when it ended:")
            self.append(exit_info.log_tail)
        if len(logs.lines) >= FETCH_LIMIT:
            self._schedule(0)  # a backlog: the rest at once
        else:
            # The feed may have said more while this request was out.
            self._fetch_if_more()

    def _fetch_if_more(self, *_: object) -> None:
        """Read the new lines when the store's count is past what this view showed."""
        if self._unlisted:
            # Once: its answer says it is gone (404).
            self._unlisted = False
            self._fetch()
            return
        count: LogCount | None = self._bridge.log_counts.get(self.instance_id)
        if count is None or self._generation is None:
            return
        # Generations only grow: a count from before a restart this view already read is
        # no reason to ask again.
        newer = count.generation > self._generation
        if newer or (count.generation == self._generation and count.lines > self._since):
            self._fetch()

    def _on_logs_failed(self, failure: Failure) -> None:
        self._call = None
        if failure.status == 404:
            self.gone = True
            self._following = False
            self.header.setText(
                f"{self.header.text()}\nThis instance is no longer listed (it was stopped or "
                "dismissed): these are the last lines it wrote."
            )
            if self.view.document().isEmpty() and self._info.last_exit is not None:
                self.append(self._info.last_exit.log_tail)
            return
        self._show_note(f"The log was not read: {failure}")
        self._schedule(RETRY_MS)

    def _schedule(self, delay_ms: int) -> None:
        if self._following:
            self._timer.start(delay_ms)

    def append(self, lines: list[str] | tuple[str, ...]) -> None:
        """Add lines at the end; the view follows only when it already showed the end."""
        if not lines:
            return
        bar = self.view.verticalScrollBar()
        following = bar.value() >= bar.maximum()
        before_blocks = 0 if self.view.document().isEmpty() else self.view.blockCount()
        before_value = bar.value()
        cursor = QTextCursor(self.view.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        text = "\n".join(lines)
        cursor.insertText(("\n" + text) if before_blocks else text)
        if following:
            bar.setValue(bar.maximum())
        else:
            # Lines dropped at the top (the block limit) move the rest up: follow the text.
            dropped = max(0, before_blocks + len(lines) - MAX_LINES)
            bar.setValue(max(0, before_value - dropped))

    # -- the instance's state -----------------------------------------------------------

    def _mark_restart(self) -> None:
        self.restarts_seen += 1
        stamp = time.strftime("%H:%M:%S")
        self.append([f"――― the engine restarted: its new output from {stamp} ―――"])

    def _on_bridge_instances_changed(self, instances: list[InstanceInfo]) -> None:
        info = next((i for i in instances if i.id == self.instance_id), None)
        if info is not None:
            self._show_info(info)
        elif not self.gone:
            # Stopped or dismissed: one more read says so (and takes its last lines).
            self._unlisted = True
            self._fetch()

    def _show_info(self, info: InstanceInfo) -> None:
        self._info = info
        where = f"{info.base_url}, pid {info.pid}" if info.pid else info.base_url
        text = f"{info.engine.value} · {model_name(info.model)} · {where}\nStatus: "
        text += status_in_words(info)
        if info.status == InstanceStatus.FAILED and info.last_exit is not None:
            text += f"\nLast exit: {info.last_exit.message}"
        self.header.setText(text)

    def _show_note(self, text: str) -> None:
        self.note.setText(text)
        self.note.show()
