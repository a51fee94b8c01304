"""The Running instances section: the live table, the chosen row's actions, Scan and Attach…."""

from __future__ import annotations

from PySide6.QtCore import QItemSelection, QModelIndex, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QHideEvent, QShowEvent
from PySide6.QtWidgets import QGroupBox, QLabel, QMessageBox, QVBoxLayout, QWidget

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo, InstanceList, InstanceOrigin, InstanceStatus
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.dialogs.attach_dialog import AttachDialog
from roundhouse.gui.dialogs.log_dialog import LogDialog
from roundhouse.gui.dialogs.metrics_dialog import MetricsDialog
from roundhouse.gui.dialogs.use_with_dialog import UseWithDialog
from roundhouse.gui.widgets.confirm import ask_to_confirm
from roundhouse.gui.widgets.instances_actions import InstanceActions
from roundhouse.gui.widgets.instances_model import HEADERS, InstancesModel
from roundhouse.gui.widgets.instances_table import instances_table
from roundhouse.gui.widgets.instances_windows import InstanceWindows
from roundhouse.gui.widgets.instances_words import (
    instance_name,
    is_endpoint,
    stop_question,
    stop_verbs,
)

EMPTY_TEXT = "No engine is running. Start one with “Start…” here or on an engine below."
# The uptimes are repainted this often while the table shows (a clock, not a request).
UPTIME_TICK_MS = 1000


class InstancesSection(QGroupBox):
    """Stop, Restart, Logs, Metrics and Copy base URL act on the selected row; a failed row is
    dismissed, an attached server detached; stopping an engine Roundhouse did not start asks.
    Such an engine is marked unprotected (what to do shows when it is chosen), and its menu
    lets it serve preset models."""

    start_requested = Signal()

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__("Running instances", parent)
        self._ops = Ops(self)
        self._bridge = bridge
        # Instances with an action on its way: their buttons wait for the answer.
        self._busy: dict[str, str] = {}
        # The rows may be out of date: the last listing failed or the daemon is not connected.
        self._stale = False
        self._windows = InstanceWindows(bridge, self)
        self.log_dialogs = self._windows.log_dialogs
        self.metrics_dialogs = self._windows.metrics_dialogs
        self.confirm_box: QMessageBox | None = None
        self._scan_call: Call | None = None
        self.model = InstancesModel(parent=self)
        self.table = instances_table(self.model)
        self._uptime_tick = QTimer(self)
        self._uptime_tick.setInterval(UPTIME_TICK_MS)
        self._uptime_tick.timeout.connect(self.model.tick_uptimes)

        self._actions = actions = InstanceActions(self)
        self.start_button = actions.start_button
        self.stop_button = actions.stop_button
        self.restart_button = actions.restart_button
        self.logs_button = actions.logs_button
        self.metrics_button = actions.metrics_button
        self.copy_button = actions.copy_button
        self.use_button = actions.use_button
        self.scan_button = actions.scan_button
        self.attach_button = actions.attach_button
        self.presets_action = actions.presets_action
        self.scan_button.clicked.connect(self.scan)
        self.attach_button.clicked.connect(self.open_attach_dialog)
        self.message_label = QLabel(EMPTY_TEXT)
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        actions.connect("stop", self.stop_selected)
        actions.connect("restart", self.restart_selected)
        actions.connect("logs", self.open_logs_of_selected)
        actions.connect("metrics", self.open_metrics_of_selected)
        actions.connect("copy", self.copy_base_url)
        actions.connect("use", self.open_use_with_selected)
        self.presets_action.triggered.connect(self.allow_presets_of_selected)
        self.start_button.clicked.connect(self.start_requested)

        layout = QVBoxLayout(self)
        layout.addLayout(actions.row())
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

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._uptime_tick.start()

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        self._uptime_tick.stop()

    @property
    def attach_dialog(self) -> AttachDialog | None:
        """The attach dialog while it is open."""
        return self._windows.attach_dialog

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
        if info.engine == EngineId.EXO and not is_endpoint(info):
            # Roundhouse never stops exo: nothing to confirm, the daemon says why in words.
            self.stop(info)
            return
        if info.origin == InstanceOrigin.EXTERNAL and info.status != InstanceStatus.FAILED:
            self._confirm_stop(info)
            return
        self.stop(info)

    def stop(self, info: InstanceInfo, *, force: bool = False) -> None:
        """Stop (or dismiss, or detach) it; `force` for an engine Roundhouse did not start."""
        doing, done = stop_verbs(info)
        self._begin(info, doing)
        call = self._bridge.stop_instance(info.id, force=force)
        self._ops.run(
            call,
            lambda _: self._end(info, done),
            on_failure=lambda failure: self._end(info, None, failure),
        )

    def allow_presets_of_selected(self, allowed: bool) -> None:
        """Let the chosen engine Roundhouse did not start serve preset models, or not."""
        info = self.selected()
        if info is None or info.id in self._busy:
            return
        self._begin(info, "Changing what the gateway sends to")
        done = (
            "may now serve the models your presets start"
            if allowed
            else "no longer serves the models your presets start"
        )
        call = self._bridge.allow_presets(info.id, allowed)
        self._ops.run(
            call,
            lambda _: self._end(info, done),
            on_failure=lambda failure: self._end(info, None, failure),
        )

    def scan(self) -> None:
        """Ask the daemon to look for engines it did not start; the table shows what it found."""
        if self._scan_call is not None:
            return
        self.scan_button.setEnabled(False)
        self.message_label.setText("Looking for engines running without Roundhouse…")
        self._scan_call = call = self._bridge.scan_instances()
        self._ops.run(call, self._on_scan_succeeded, on_failure=self._on_scan_failed)
        call.finished.connect(self._on_scan_finished)

    def open_attach_dialog(self) -> AttachDialog:
        """One attach dialog at a time; the new server's row is selected once attached."""
        return self._windows.open_attach(self._on_attach_dialog_attached)

    def open_metrics_of_selected(self) -> MetricsDialog | None:
        info = self.selected()
        return self.open_metrics(info) if info is not None else None

    def open_metrics(self, info: InstanceInfo) -> MetricsDialog:
        """One metrics window per instance: opening it again brings it to the front."""
        return self._windows.open_metrics(info)

    def restart_selected(self) -> None:
        info = self.selected()
        if info is None or info.id in self._busy:
            return
        self._begin(info, "Restarting")
        call = self._bridge.restart_instance(info.id)
        self._ops.run(
            call,
            lambda _: self._end(info, "restarting"),
            on_failure=lambda failure: self._end(info, None, failure),
        )

    def open_logs_of_selected(self) -> LogDialog | None:
        info = self.selected()
        return self.open_logs(info) if info is not None else None

    def open_logs(self, info: InstanceInfo) -> LogDialog:
        """One log window per instance: opening it again brings it to the front."""
        return self._windows.open_logs(info)

    @property
    def use_with_dialog(self) -> UseWithDialog | None:
        """The Use with… window while it is open."""
        return self._windows.use_with_dialog

    def open_use_with_selected(self) -> UseWithDialog | None:
        """Settings for the clients people point at a model, for the chosen row's model."""
        info = self.selected()
        return self._windows.open_use_with(info.id) if info is not None else None

    def copy_base_url(self) -> None:
        info = self.selected()
        if info is None:
            return
        clipboard = QGuiApplication.clipboard()
        gateway = self._bridge.gateway_url
        if info.origin != InstanceOrigin.EXTERNAL and gateway is not None:
            # The engine itself answers only Roundhouse, with its instance's key (ADR 21).
            clipboard.setText(gateway)
            self.message_label.setText(
                f"Copied {gateway}: apps reach this model through the gateway there; "
                "the engine's own port answers only Roundhouse."
            )
            return
        clipboard.setText(info.base_url)
        self.message_label.setText(f"Copied {info.base_url}")

    # -- how actions go -----------------------------------------------------------------

    def _confirm_stop(self, info: InstanceInfo) -> None:
        question = stop_question(info)
        self.confirm_box = ask_to_confirm(
            self.window(),
            title=question.title,
            text=question.text,
            detail=question.detail,
            action=question.action,
            on_confirm=lambda: self.stop(info, force=question.force),
            on_closed=self._forget_confirm_box,
        )

    def _forget_confirm_box(self) -> None:
        self.confirm_box = None

    def _begin(self, info: InstanceInfo, doing: str) -> None:
        self._busy[info.id] = doing
        self.message_label.setText(f"{doing} {instance_name(info)}…")
        self._update_actions()

    def _end(self, info: InstanceInfo, done: str | None, failure: Failure | None = None) -> None:
        self._busy.pop(info.id, None)
        if failure is not None:
            self.message_label.setText(f"{instance_name(info)}: {failure}")
        elif done == "restarting":
            self.message_label.setText(f"{instance_name(info)} is starting again.")
        else:
            self.message_label.setText(f"{instance_name(info)} {done}.")
        self._update_actions()

    def _update_actions(self) -> None:
        info = self.selected()
        self._actions.update(
            info,
            connected=self._bridge.state == ConnectionState.CONNECTED,
            busy=info is not None and info.id in self._busy,
            scanning=self._scan_call is not None,
        )

    def _on_table_selection_changed(self, _selected: QItemSelection, _: QItemSelection) -> None:
        self._update_actions()
        info = self.selected()
        if info is not None and info.unprotected and not self._busy:
            # What the badge means and what to do, where it is read without hovering.
            self.message_label.setText(" ".join([info.unprotected, *info.warnings]))

    def _on_table_double_clicked(self, index: QModelIndex) -> None:
        self.open_logs(self.model.instance(index.row()))

    def _on_table_context_menu_requested(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        if not index.isValid():
            return
        self.table.selectRow(index.row())
        self._actions.popup_menu(self.table.viewport().mapToGlobal(pos))

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
        if found:
            names = ", ".join(f"{i.engine.value} on port {i.port}" for i in found)
            lines = [f"Running without Roundhouse: {names}."]
        else:
            lines = ["No engine runs here without Roundhouse."]
        self.message_label.setText("\n".join([*lines, *listed.left_out]))

    def _on_scan_failed(self, failure: Failure) -> None:
        self.message_label.setText(f"The scan failed: {failure}")

    def _on_scan_finished(self) -> None:
        self._scan_call = None
        self._update_actions()

    def _on_attach_dialog_attached(self, info: InstanceInfo) -> None:
        self.select_instance(info.id)
        models = ", ".join(info.models) or "no models listed"
        attached = f"Attached {info.name or info.base_url}: {models}."
        self.message_label.setText("\n".join([attached, *info.warnings]))

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
