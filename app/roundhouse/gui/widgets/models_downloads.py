"""The download queue, live: one row per file or Ollama pull, fed by the daemon's change feed
(the bridge's store) and repainted at most four times a second from the latest snapshot; read
once when first shown and again after the feed's reset."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.downloads import AnyDownloadItem, DownloadQueueView, DownloadState
from roundhouse.base.units import format_bytes, format_duration
from roundhouse.gui.call import Call
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.widgets.models_download_row import DownloadRow, item_label

REPAINT_MS = 250
FINISHED = frozenset({DownloadState.DONE, DownloadState.CANCELLED})


def totals_in_words(view: DownloadQueueView) -> str:
    """'1 downloading, 2 queued · 40.0 MiB of 120.0 MiB · 5.0 MiB/s, 16s left'."""
    totals = view.totals
    if not totals.unfinished_bytes:
        count = len(view.items)
        return "Nothing to download." if count == 0 else "Every download has ended."
    parts = [f"{totals.active} downloading, {totals.queued} queued"]
    parts.append(
        f"{format_bytes(totals.unfinished_done_bytes)} of {format_bytes(totals.unfinished_bytes)}"
    )
    if totals.speed_bps > 0:
        eta = f", {format_duration(totals.eta_s)} left" if totals.eta_s is not None else ""
        parts.append(f"{format_bytes(totals.speed_bps)}/s{eta}")
    return " · ".join(parts)


class DownloadsPanel(QWidget):
    """Follows the queue while connected; each action answers in the message line."""

    counts_changed = Signal(int)  # unfinished files
    item_finished = Signal(object)  # DownloadItem or OllamaPullItem, once it is done

    def __init__(
        self, bridge: DaemonBridge, calls: ModelsCalls, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self._calls = calls
        self._latest: DownloadQueueView | None = None
        self._states: dict[str, DownloadState] | None = None
        self._actions: dict[str, Call] = {}
        self.rows: dict[str, DownloadRow] = {}
        self.totals_label = QLabel("Waiting for the daemon…")
        self.clear_button = QPushButton("Clear finished")
        self.clear_button.setToolTip("Forget done and cancelled files (downloaded files stay)")
        self.clear_button.clicked.connect(self.clear_finished)
        header = QHBoxLayout()
        header.addWidget(self.totals_label, 1)
        header.addWidget(self.clear_button)
        self.empty_label = QLabel("No downloads yet: choose a model under Search, then Download.")
        self.empty_label.setObjectName("hint")
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        content = QWidget()
        self._rows_layout = QVBoxLayout(content)
        self._rows_layout.setContentsMargins(0, 0, 8, 0)
        self._rows_layout.addWidget(self.empty_label)
        self._rows_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(content)
        self.where_label = QLabel()
        self.where_label.setObjectName("hint")
        self.message_label = QLabel()
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(header)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.message_label)
        layout.addWidget(self.where_label)

        self._repaint = QTimer(self)
        self._repaint.setSingleShot(True)
        self._repaint.setInterval(REPAINT_MS)
        self._repaint.timeout.connect(self.paint)
        # Followed from the first time the page shows (`follow`), then while connected.
        self._wanted = False
        bridge.downloads_changed.connect(self._on_downloads_changed)
        bridge.feed_reset.connect(self._on_feed_reset)
        self.clear_button.setEnabled(False)

    # -- following ----------------------------------------------------------------------

    @property
    def following(self) -> bool:
        """Whether the queue shown is live: followed, and the change feed connected."""
        return self._wanted and self._bridge.state == ConnectionState.CONNECTED

    def follow(self) -> None:
        """Follow the queue from now on: read it once, then the change feed keeps it."""
        if not self._wanted:
            self._wanted = True
            self._load()

    def stop(self) -> None:
        self._wanted = False

    def _load(self) -> None:
        if self._bridge.state == ConnectionState.CONNECTED:
            self._ops.run(
                self._calls.downloads(),
                self.show_queue,
                on_failure=lambda failure: self._say(f"The download list was not read: {failure}"),
            )

    def _on_downloads_changed(self, view: DownloadQueueView) -> None:
        if self._wanted:
            self.show_queue(view)

    def _on_feed_reset(self) -> None:
        """Changes may have been missed (a new connection, a daemon that restarted)."""
        if self._wanted:
            self._load()

    # -- showing ------------------------------------------------------------------------

    def show_queue(self, view: DownloadQueueView) -> None:
        """Take a snapshot (from the feed or an action's answer); painted within 250 ms."""
        self._latest = view
        if not self._repaint.isActive():
            self._repaint.start()

    def paint(self) -> None:
        view = self._latest
        if view is None:
            return
        # Hub files and Ollama pulls in one list, the oldest first.
        items: list[AnyDownloadItem] = [*view.items, *view.ollama]
        items.sort(key=lambda item: item.created_at)
        wanted = {item.id for item in items}
        for item_id in [i for i in self.rows if i not in wanted]:
            self.rows.pop(item_id).deleteLater()
        for index, item in enumerate(items):
            row = self.rows.get(item.id)
            if row is None:
                row = self.rows[item.id] = DownloadRow(item)
                row.action_requested.connect(self._on_row_action_requested)
                row.set_busy(item.id in self._actions)
                self._rows_layout.insertWidget(index + 1, row)
            else:
                row.show_item(item)
        self.empty_label.setVisible(not items)
        self.totals_label.setText(totals_in_words(view))
        where = f"Files go to the Hugging Face cache at {view.hub_cache}"
        if view.ollama:
            where += "; Ollama pulls go to Ollama's own store"
        self.where_label.setText(where)
        self.clear_button.setEnabled(any(item.state in FINISHED for item in items))
        self._announce(items)

    def _announce(self, items: list[AnyDownloadItem]) -> None:
        before, self._states = self._states, {item.id: item.state for item in items}
        unfinished = sum(1 for item in items if item.state not in FINISHED)
        self.counts_changed.emit(unfinished)
        if before is None:
            return  # the first snapshot: what finished earlier is not news
        for item in items:
            if item.state == DownloadState.DONE and before.get(item.id) != DownloadState.DONE:
                self.item_finished.emit(item)

    def row_states(self) -> dict[str, str]:
        """Each item's state as shown, by path ('ollama:<model>' for a pull): for tests and
        the screenshots."""
        return {item_label(row.item): row.item.state.value for row in self.rows.values()}

    def row_for(self, path: str) -> DownloadRow | None:
        return next((row for row in self.rows.values() if item_label(row.item) == path), None)

    # -- actions ------------------------------------------------------------------------

    def clear_finished(self) -> None:
        call = self._calls.clear_finished()
        self._ops.run(
            call, self.show_queue, on_failure=lambda failure: self._say(f"Not cleared: {failure}")
        )

    def _on_row_action_requested(self, item_id: str, action: str) -> None:
        if item_id in self._actions:
            return
        send = {"pause": self._calls.pause, "resume": self._calls.resume}.get(
            action, self._calls.cancel
        )
        self._actions[item_id] = call = send(item_id)
        if (row := self.rows.get(item_id)) is not None:
            row.set_busy(True)
        self._ops.run(
            call,
            self._on_action_succeeded,
            on_failure=lambda failure: self._say(f"Could not {action} it: {failure}"),
        )
        call.finished.connect(lambda: self._on_action_finished(item_id))

    def _on_action_succeeded(self, item: AnyDownloadItem) -> None:
        # Shown at once, in case the feed is slow to say it.
        view = self._latest
        if view is not None:
            items = [item if known.id == item.id else known for known in view.items]
            pulls = [item if known.id == item.id else known for known in view.ollama]
            self.show_queue(view.model_copy(update={"items": items, "ollama": pulls}))

    def _on_action_finished(self, item_id: str) -> None:
        self._actions.pop(item_id, None)
        if (row := self.rows.get(item_id)) is not None:
            row.set_busy(False)

    def _say(self, text: str) -> None:
        self.message_label.setText(text)
