"""The starter's download in the guide: one row per file, live, with Pause, Resume and Cancel.

The queue is the daemon's: the download goes on if the guide is closed, and the Models page
shows it too. Rows repaint from the latest queue view on a timer, not per event.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from roundhouse.api.downloads import AnyDownloadItem, DownloadQueueView, DownloadState
from roundhouse.api.starters import StarterOption
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.first_run import FirstRunCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.widgets.models_download_row import DownloadRow

REPAINT_MS = 250
# Ended for good: cancelled, or a file kept aside; paused and failed ones can be resumed.
_GIVEN_UP = frozenset({DownloadState.CANCELLED, DownloadState.QUARANTINED})


class DownloadPanel(QWidget):
    """Emits `ended(problem)` once the files are done ('') or given up (why, in words)."""

    ended = Signal(str)

    def __init__(self, calls: FirstRunCalls, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._calls = calls
        self.ids: set[str] = set()
        self.rows: dict[str, DownloadRow] = {}
        self.latest: dict[str, AnyDownloadItem] = {}
        # Following the queue through the bridge's store (its change feed).
        self._following = False
        self.running = False
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._repaint = QTimer(self)
        self._repaint.setInterval(REPAINT_MS)
        self._repaint.timeout.connect(self._paint)
        self.hide()

    def start(self, option: StarterOption) -> None:
        """Queue the option's files in the daemon and follow them."""
        for row in self.rows.values():
            row.deleteLater()
        self.rows, self.latest, self.ids = {}, {}, set()
        self.running = True
        call = self._calls.download(option)
        self._ops.run(call, self._on_queued, on_failure=lambda failure: self._end(str(failure)))

    def stop_following(self) -> None:
        if self._following:
            self._following = False
            store = self._calls.bridge
            store.downloads_changed.disconnect(self._on_queue)
            store.feed_reset.disconnect(self._read_queue)
        self._repaint.stop()

    def _read_queue(self) -> None:
        """The queue as it is now: once at the start, and after a reset of the feed."""
        self._ops.run(
            self._calls.queue(),
            self._on_queue,
            on_failure=lambda failure: self._end(f"Lost track of it: {failure}"),
        )

    def _on_queued(self, ids: set[str]) -> None:
        if not ids:
            self._end("")  # already complete: the library has it
            return
        self.ids = ids
        self.show()
        if not self._following:
            self._following = True
            store = self._calls.bridge
            store.downloads_changed.connect(self._on_queue)
            store.feed_reset.connect(self._read_queue)
        self._read_queue()
        self._repaint.start()

    def _on_queue(self, view: DownloadQueueView) -> None:
        items: list[AnyDownloadItem] = [*view.items, *view.ollama]
        for item in items:
            if item.id in self.ids:
                self.latest[item.id] = item
        if len(self.latest) < len(self.ids):
            return
        states = {i.state for i in self.latest.values()}
        if states == {DownloadState.DONE}:
            self._end("")
        elif states & _GIVEN_UP:
            given_up = next(i for i in self.latest.values() if i.state in _GIVEN_UP)
            self._end(given_up.error or f"It was {given_up.state.value}.")

    def _paint(self) -> None:
        for item_id, item in self.latest.items():
            row = self.rows.get(item_id)
            if row is None:
                row = self.rows[item_id] = DownloadRow(item)
                row.action_requested.connect(self._on_action)
                self._layout.addWidget(row)
            else:
                row.show_item(item)

    def _on_action(self, item_id: str, action: str) -> None:
        row = self.rows.get(item_id)
        if row is not None:
            row.set_busy(True)
        call = self._calls.act(item_id, action)
        call.finished.connect(lambda: row.set_busy(False) if row is not None else None)
        call.failed.connect(self._on_action_failed)

    def _on_action_failed(self, failure: Failure) -> None:
        for row in self.rows.values():
            row.error_label.setText(str(failure))
            row.error_label.show()

    def _end(self, problem: str) -> None:
        if not self.running:
            return
        self.running = False
        self._paint()
        self.stop_following()
        self.ended.emit(problem)
