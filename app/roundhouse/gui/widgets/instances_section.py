"""The running instances: a table that updates in place, the actions on the chosen row, and
finding (Scan) or adding (Attach…) engines Roundhouse did not start."""

from __future__ import annotations

from PySide6.QtCore import QItemSelection, QModelIndex, QPoint, Qt, Signal
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QMessageBox,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.external import AttachSource
from roundhouse.api.instances import InstanceInfo, InstanceList, InstanceOrigin, InstanceStatus
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.dialogs.attach_dialog import AttachDialog
from roundhouse.gui.dialogs.log_dialog import LogDialog
from roundhouse.gui.dialogs.metrics_dialog import MetricsDialog
from roundhouse.gui.widgets.confirm import ask_to_confirm
from roundhouse.gui.widgets.instances_model import HEADERS, Column, InstancesModel, model_name

EMPTY_TEXT = "No engine is running. Start one with “Start…” here or on an engine below."


def is_endpoint(info: InstanceInfo) -> bool:
    """A server the user attached by URL: stopping it only detaches it."""
    return info.found_by == AttachSource.USER_ENDPOINT


class InstancesSection(QGroupBox):
    """Stop, Restart, Logs, Metrics and Copy base URL act on the selected row; a failed row is
    dismissed, an attached server detached; stopping an engine Roundhouse did not start asks."""

    start_requested = Signal()

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__("Running instances", parent)
        self._bridge = bridge
        # Instances with an action on its way: their buttons wait for the answer.
        self._busy: dict[str, str] = {}
        # The rows may be out of date: the last listing failed or the daemon is not connected.
        self._stale = False
        self.log_dialogs: dict[str, LogDialog] = {}
        self.metrics_dialogs: dict[str, MetricsDialog] = {}
        self.attach_dialog: AttachDialog | None = None
        self.confirm_box: QMessageBox | None = None
        self._scan_call: Call | None = None
        self.model = InstancesModel(parent=self)

        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.table.verticalHeader().hide()
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.setMinimumHeight(110)
        header = self.table.horizontalHeader()
        header.setHighlightSections(False)
        for column in HEADERS:
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        # The model's name may be long (a full repo id): a fixed width, the path in the tooltip.
        header.setSectionResizeMode(Column.MODEL, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(Column.MODEL, 200)
        header.setSectionResizeMode(Column.STATUS, QHeaderView.ResizeMode.Stretch)

        self.start_button = QPushButton("Start…")
        self.start_button.setToolTip("Start an engine with a model")
        self.stop_button = QPushButton("Stop")
        self.restart_button = QPushButton("Restart")
        self.restart_button.setToolTip("Stop it and start it again with the same options")
        self.logs_button = QPushButton("Logs")
        self.logs_button.setToolTip("Follow the engine's output")
        self.metrics_button = QPushButton("Metrics")
        self.metrics_button.setToolTip("The engine's own counters: tokens, requests, cache")
        self.copy_button = QPushButton("Copy base URL")
        self.copy_button.setToolTip("Copy the engine's OpenAI-compatible base URL")
        self.scan_button = QPushButton("Scan")
        self.scan_button.setToolTip(
            "Look for engines running on this machine without Roundhouse (and Ollama)"
        )
        self.scan_button.clicked.connect(self.scan)
        self.attach_button = QPushButton("Attach…")
        self.attach_button.setToolTip("Add an OpenAI-compatible server by its URL")
        self.attach_button.clicked.connect(self.open_attach_dialog)
        self.message_label = QLabel(EMPTY_TEXT)
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._actions = {
            "stop": QAction("Stop", self),
            "restart": QAction("Restart", self),
            "logs": QAction("Logs", self),
            "metrics": QAction("Metrics", self),
            "copy": QAction("Copy base URL", self),
        }
        for button, key, slot in (
            (self.stop_button, "stop", self.stop_selected),
            (self.restart_button, "restart", self.restart_selected),
            (self.logs_button, "logs", self.open_logs_of_selected),
            (self.metrics_button, "metrics", self.open_metrics_of_selected),
            (self.copy_button, "copy", self.copy_base_url),
        ):
            button.clicked.connect(slot)
            self._actions[key].triggered.connect(slot)
        self.start_button.clicked.connect(self.start_requested)

        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addSpacing(12)
        for button in (
            self.stop_button,
            self.restart_button,
            self.logs_button,
            self.metrics_button,
            self.copy_button,
        ):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.scan_button)
        buttons.addWidget(self.attach_button)
        layout = QVBoxLayout(self)
        layout.addLayout(buttons)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.message_label)

        selection = self.table.selectionModel()
        selection.selectionChanged.connect(self._on_table_selection_changed)
        self.table.doubleClicked.connect(self._on_table_double_clicked)
        self.table.customContextMenuRequested.connect(self._on_table_context_menu_requested)
        self.model.rowsInserted.connect(self._on_model_rows_changed)
        self.model.rowsRemoved.connect(self._on_model_rows_changed)
        self.model.dataChanged.connect(self._on_model_data_changed)
        bridge.instances_changed.connect(self._on_bridge_instances_changed)
        bridge.instances_failed.connect(self._on_bridge_instances_failed)
        bridge.state_changed.connect(self._on_bridge_state_changed)
        if bridge.instances is not None:
            self.model.set_instances(bridge.instances)
        self._update_actions()

    # -- the selection ------------------------------------------------------------------

    def selected(self) -> InstanceInfo | None:
        rows = self.table.selectionModel().selectedRows()
        return self.model.instance(rows[0].row()) if rows else None

    def select_instance(self, instance_id: str) -> bool:
        row = self.model.row_of(instance_id)
        if row is None:
            return False
        self.table.selectRow(row)
        return True

    def row_texts(self) -> list[dict[str, str]]:
        """What each row shows, by column header: for tests and the screenshots."""
        return [
            {header: self.model.text(info, column) for column, header in HEADERS.items()}
            for info in self.model.instances()
        ]

    # -- actions ------------------------------------------------------------------------

    def stop_selected(self) -> None:
        info = self.selected()
        if info is None or info.id in self._busy:
            return
        if info.origin == InstanceOrigin.EXTERNAL and info.status != InstanceStatus.FAILED:
            self._confirm_stop(info)
            return
        self.stop(info)

    def stop(self, info: InstanceInfo, *, force: bool = False) -> None:
        """Stop (or dismiss, or detach) it; `force` for an engine Roundhouse did not start."""
        if info.status == InstanceStatus.FAILED:
            doing, done = "Dismissing", "dismissed"
        elif is_endpoint(info):
            doing, done = "Detaching", "detached"
        else:
            doing, done = "Stopping", "stopped"
        self._begin(info, doing)
        call = self._bridge.stop_instance(info.id, force=force)
        call.succeeded.connect(lambda _: self._end(info, done))
        call.failed.connect(lambda failure: self._end(info, None, failure))

    def scan(self) -> None:
        """Ask the daemon to look for engines it did not start; the table shows what it found."""
        if self._scan_call is not None:
            return
        self.scan_button.setEnabled(False)
        self.message_label.setText("Looking for engines running without Roundhouse…")
        self._scan_call = call = self._bridge.scan_instances()
        call.succeeded.connect(self._on_scan_succeeded)
        call.failed.connect(self._on_scan_failed)
        call.finished.connect(self._on_scan_finished)

    def open_attach_dialog(self) -> AttachDialog:
        """One attach dialog at a time; the new server's row is selected once attached."""
        if self.attach_dialog is not None:
            self.attach_dialog.raise_()
            return self.attach_dialog
        dialog = AttachDialog(self._bridge, self.window())
        dialog.attached.connect(self._on_attach_dialog_attached)
        dialog.finished.connect(self._on_attach_dialog_finished)
        self.attach_dialog = dialog
        # open(), not exec(): a nested event loop would stall qasync's tasks.
        dialog.open()
        return dialog

    def open_metrics_of_selected(self) -> MetricsDialog | None:
        info = self.selected()
        return self.open_metrics(info) if info is not None else None

    def open_metrics(self, info: InstanceInfo) -> MetricsDialog:
        """One metrics window per instance: opening it again brings it to the front."""
        dialog = self.metrics_dialogs.get(info.id)
        if dialog is None:
            dialog = MetricsDialog(self._bridge, info, self.window())
            dialog.finished.connect(lambda _: self._on_metrics_dialog_finished(info.id))
            self.metrics_dialogs[info.id] = dialog
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()
        return dialog

    def restart_selected(self) -> None:
        info = self.selected()
        if info is None or info.id in self._busy:
            return
        self._begin(info, "Restarting")
        call = self._bridge.restart_instance(info.id)
        call.succeeded.connect(lambda _: self._end(info, "restarting"))
        call.failed.connect(lambda failure: self._end(info, None, failure))

    def open_logs_of_selected(self) -> LogDialog | None:
        info = self.selected()
        return self.open_logs(info) if info is not None else None

    def open_logs(self, info: InstanceInfo) -> LogDialog:
        """One log window per instance: opening it again brings it to the front."""
        dialog = self.log_dialogs.get(info.id)
        if dialog is None:
            dialog = LogDialog(self._bridge, info, self.window())
            dialog.finished.connect(lambda _: self._on_log_dialog_finished(info.id))
            self.log_dialogs[info.id] = dialog
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()
        return dialog

    def copy_base_url(self) -> None:
        info = self.selected()
        if info is None:
            return
        clipboard = QGuiApplication.clipboard()
        clipboard.setText(info.base_url)
        self.message_label.setText(f"Copied {info.base_url}")

    # -- how actions go -----------------------------------------------------------------

    def _confirm_stop(self, info: InstanceInfo) -> None:
        endpoint = is_endpoint(info)
        if endpoint:
            title, action = "Detach a server", "Detach"
            text = f"Detach {info.name or info.base_url}?"
            detail = (
                "Roundhouse forgets its address and its API key. The server itself keeps "
                "running; attach it again any time."
            )
        else:
            title, action = "Stop an engine Roundhouse did not start", "Stop it"
            text = f"Stop {info.engine.value} on port {info.port}?"
            detail = (
                "Roundhouse found this engine running but did not start it: another program "
                "or person may rely on it."
            )
        self.confirm_box = ask_to_confirm(
            self.window(),
            title=title,
            text=text,
            detail=detail,
            action=action,
            # The user agreed: the daemon stops an engine it did not start only when told.
            on_confirm=lambda: self.stop(info, force=not endpoint),
            on_closed=self._forget_confirm_box,
        )

    def _forget_confirm_box(self) -> None:
        self.confirm_box = None

    def _begin(self, info: InstanceInfo, doing: str) -> None:
        self._busy[info.id] = doing
        self.message_label.setText(f"{doing} {_name(info)}…")
        self._update_actions()

    def _end(self, info: InstanceInfo, done: str | None, failure: Failure | None = None) -> None:
        self._busy.pop(info.id, None)
        if failure is not None:
            self.message_label.setText(f"{_name(info)}: {failure}")
        elif done == "restarting":
            self.message_label.setText(f"{_name(info)} is starting again.")
        else:
            self.message_label.setText(f"{_name(info)} {done}.")
        self._update_actions()

    def _update_actions(self) -> None:
        info = self.selected()
        connected = self._bridge.state == ConnectionState.CONNECTED
        usable = connected and info is not None and info.id not in self._busy
        failed = info is not None and info.status == InstanceStatus.FAILED
        endpoint = info is not None and is_endpoint(info)
        stop_text = "Dismiss" if failed else "Detach" if endpoint else "Stop"
        self.stop_button.setText(stop_text)
        self._actions["stop"].setText(stop_text)
        if failed:
            self.stop_button.setToolTip("Forget this failed instance")
        elif endpoint:
            self.stop_button.setToolTip("Forget this server; it keeps running")
        else:
            self.stop_button.setToolTip("Stop the engine and its processes")
        can_restart = usable and info is not None and info.options is not None
        enabled = {
            "stop": usable and (info is None or info.status != InstanceStatus.STOPPING),
            "restart": can_restart,
            "logs": info is not None and connected and not endpoint,
            "metrics": info is not None and connected and not failed,
            "copy": info is not None and not failed,
        }
        for key, button in (
            ("stop", self.stop_button),
            ("restart", self.restart_button),
            ("logs", self.logs_button),
            ("metrics", self.metrics_button),
            ("copy", self.copy_button),
        ):
            button.setEnabled(enabled[key])
            self._actions[key].setEnabled(enabled[key])
        self.start_button.setEnabled(connected)
        self.scan_button.setEnabled(connected and self._scan_call is None)
        self.attach_button.setEnabled(connected)
        if info is not None and info.options is None:
            self.restart_button.setToolTip(
                "Roundhouse does not know the options this engine was started with: "
                "stop it and start it again instead."
            )
        else:
            self.restart_button.setToolTip("Stop it and start it again with the same options")

    def _on_table_selection_changed(self, _selected: QItemSelection, _: QItemSelection) -> None:
        self._update_actions()

    def _on_table_double_clicked(self, index: QModelIndex) -> None:
        self.open_logs(self.model.instance(index.row()))

    def _on_table_context_menu_requested(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        if not index.isValid():
            return
        self.table.selectRow(index.row())
        menu = QMenu(self)
        for key in ("stop", "restart", "logs", "metrics", "copy"):
            menu.addAction(self._actions[key])
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.popup(self.table.viewport().mapToGlobal(pos))

    def _on_model_rows_changed(self) -> None:
        if self.model.rowCount() == 0 and not self._busy:
            self.message_label.setText(EMPTY_TEXT)
        elif self.message_label.text() == EMPTY_TEXT:
            self.message_label.setText("")
        self._update_actions()

    def _show_idle_message(self) -> None:
        self.message_label.setText("" if self.model.rowCount() else EMPTY_TEXT)

    def _on_model_data_changed(self) -> None:
        # The selected row may have failed (Stop becomes Dismiss) or started stopping.
        self._update_actions()

    def _on_scan_succeeded(self, listed: InstanceList) -> None:
        found = [i for i in listed.instances if i.origin == InstanceOrigin.EXTERNAL]
        if not found:
            self.message_label.setText("No engine runs here without Roundhouse.")
            return
        names = ", ".join(f"{i.engine.value} on port {i.port}" for i in found)
        self.message_label.setText(f"Running without Roundhouse: {names}.")

    def _on_scan_failed(self, failure: Failure) -> None:
        self.message_label.setText(f"The scan failed: {failure}")

    def _on_scan_finished(self) -> None:
        self._scan_call = None
        self._update_actions()

    def _on_attach_dialog_attached(self, info: InstanceInfo) -> None:
        self.select_instance(info.id)
        models = ", ".join(info.models) or "no models listed"
        self.message_label.setText(f"Attached {info.name or info.base_url}: {models}.")

    def _on_attach_dialog_finished(self) -> None:
        dialog, self.attach_dialog = self.attach_dialog, None
        if dialog is not None:
            dialog.deleteLater()

    def _on_metrics_dialog_finished(self, instance_id: str) -> None:
        dialog = self.metrics_dialogs.pop(instance_id, None)
        if dialog is not None:
            dialog.deleteLater()

    def _on_log_dialog_finished(self, instance_id: str) -> None:
        dialog = self.log_dialogs.pop(instance_id, None)
        if dialog is not None:
            dialog.deleteLater()

    def _on_bridge_instances_changed(self, instances: list[InstanceInfo]) -> None:
        self.model.set_instances(instances)
        if self._stale:
            self._stale = False
            self._show_idle_message()

    def _on_bridge_instances_failed(self, message: str) -> None:
        self._stale = True
        self.message_label.setText(f"The instances were not listed: {message}")

    def _on_bridge_state_changed(self, value: str) -> None:
        if ConnectionState(value) == ConnectionState.CONNECTED:
            self._show_idle_message()
        elif self.model.rowCount():
            self._stale = True
            self.message_label.setText(
                "Showing the last known instances: not connected to the daemon."
            )
        self._update_actions()


def _name(info: InstanceInfo) -> str:
    return f"{info.engine.value} ({model_name(info.model)})"
