"""The Updates section of the Settings page (the daily check's switch, the last result, Check
now) and the status bar's note when a newer Roundhouse is out.

The switch is saved with the page (`ui.check_updates`, off by default); Check now asks the
daemon at once, whatever the switch says: the user asked. No telemetry either way.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.settings import UiSettings
from roundhouse.api.updates import UpdateStatus
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.calls.updates import UpdateCalls
from roundhouse.gui.connection_state import ConnectionState
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.widgets.settings_path_list import hint

PROJECT_PAGE = "https://pypi.org/project/roundhouse/"
UPDATES_HINT = (
    "Once a day the daemon asks PyPI (pypi.org) for the latest Roundhouse release: one plain "
    "request whose only detail is “Roundhouse/<version>” as its User-Agent. Nothing about "
    "you, this machine or its models is sent, and nothing else ever is (no telemetry)."
)
# The note re-reads the daemon's last result (no network) this often: the daemon checks daily.
NOTE_REFRESH_MS = 3600 * 1000


def status_html(status: UpdateStatus) -> str:
    text = html.escape(status.summary())
    if status.newer:
        text += f' <a href="{PROJECT_PAGE}">Get it from PyPI</a>.'
    return text


class UpdatesSection(QGroupBox):
    """`form(ui)` is what the page saves; `changed` when the switch is flipped."""

    changed = Signal()
    status_changed = Signal(object)  # UpdateStatus

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__("Updates", parent)
        self._calls = UpdateCalls(bridge)
        self._ops = Ops(self, on_busy=self._update_buttons)
        self._connected = False
        self.status: UpdateStatus | None = None
        self.check_daily = QCheckBox("Check for a newer Roundhouse once a day")
        self.check_daily.toggled.connect(self._on_toggled)
        self.result = QLabel("Not read yet")
        self.result.setWordWrap(True)
        self.result.setTextFormat(Qt.TextFormat.RichText)
        self.result.setOpenExternalLinks(True)
        self.check_button = QPushButton("Check now")
        self.check_button.setToolTip("Ask PyPI now, even with the daily check off")
        self.check_button.clicked.connect(self.check_now)
        row = QHBoxLayout()
        row.addWidget(self.result, 1)
        row.addWidget(self.check_button, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.addWidget(self.check_daily)
        layout.addWidget(hint(UPDATES_HINT))
        layout.addLayout(row)
        self._update_buttons()

    def show_settings(self, ui: UiSettings) -> None:
        self.check_daily.blockSignals(True)
        self.check_daily.setChecked(ui.check_updates)
        self.check_daily.blockSignals(False)

    def form(self, ui: UiSettings) -> UiSettings:
        return ui.model_copy(update={"check_updates": self.check_daily.isChecked()})

    def refresh(self) -> None:
        self._run(self._calls.status(), "The update check's result was not read")

    def check_now(self) -> None:
        if not self._ops.busy:
            self._run(self._calls.check(), "The update check did not run")
            self.result.setText("Asking PyPI…")

    def show_status(self, status: UpdateStatus) -> None:
        self.status = status
        self.result.setText(status_html(status))
        self.status_changed.emit(status)

    def result_text(self) -> str:
        return self.result.text()

    def set_connected(self, connected: bool) -> None:
        self._connected = connected
        self._update_buttons()

    def _run(self, call: Call, what: str) -> None:
        self._ops.run(
            call, self.show_status, on_failure=lambda failure: self._fail(what, failure), busy=True
        )

    def _fail(self, what: str, failure: Failure) -> None:
        self.result.setText(f"{html.escape(what)}: {html.escape(str(failure))}")

    def _on_toggled(self, *_: Any) -> None:
        self.changed.emit()

    def _update_buttons(self) -> None:
        self.check_button.setEnabled(self._connected and not self._ops.busy)


class UpdateNotice(QLabel):
    """A short note for the status bar, shown only while a newer release is known."""

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._calls = UpdateCalls(bridge)
        self._ops = Ops(self)
        self.setOpenExternalLinks(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.hide()
        self._timer = QTimer(self)
        self._timer.setInterval(NOTE_REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        bridge.when_connected(self.refresh)
        self._timer.start()

    def refresh(self) -> None:
        # Offline, the banner says so already: the hourly read waits for `connected`.
        if self._bridge.state != ConnectionState.CONNECTED:
            return
        self._ops.run(self._calls.status(), self.show_status)

    def show_status(self, status: UpdateStatus) -> None:
        if status.newer and status.latest:
            latest = html.escape(status.latest)
            self.setText(f'<a href="{PROJECT_PAGE}">Roundhouse {latest} is out</a>')
            self.setToolTip(status.summary())
        self.setVisible(status.newer)
