"""One machine on the Machines page: its name, whether it answers, its hardware, instances
and load, and (for a paired machine) start, stop and unpair."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.instances import InstanceInfo
from roundhouse.api.peers import PeerInfo, PeerLoad, PeerSeen
from roundhouse.gui.widgets.machines_words import (
    hardware_line,
    load_text,
    model_text,
    reachability,
)

COLUMNS = ("Model", "Engine", "Status", "Load")
ID_ROLE = Qt.ItemDataRole.UserRole
# Rows a card's table shows before it scrolls.
MAX_ROWS_SHOWN = 5


class MachineCard(QFrame):
    """This machine (read only) or a paired one (with its actions)."""

    start_requested = Signal(str, str)  # peer id, model
    stop_requested = Signal(str, str)  # peer id, instance id (as the peer knows it)
    unpair_requested = Signal(str)  # peer id
    instance_selected = Signal(str, str)  # peer id, instance id ("" when none)

    def __init__(self, peer_id: str | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # None: this machine.
        self.peer_id = peer_id
        self.peer_name = ""
        self.setObjectName("machineCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.name_label = QLabel()
        self.name_label.setObjectName("sectionTitle")
        self.state_label = QLabel()
        self.state_label.setWordWrap(True)
        self.state_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.hardware_label = QLabel()
        self.hardware_label.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        if peer_id is not None:
            self.table.setToolTip("Pick an instance to see its live charts below, or to stop it")
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in range(1, len(COLUMNS)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.table.itemSelectionChanged.connect(self._on_selection_changed)
        self.empty_label = QLabel("No instances running.")
        layout = QVBoxLayout(self)
        title_row = QHBoxLayout()
        title_row.addWidget(self.name_label)
        title_row.addStretch(1)
        layout.addLayout(title_row)
        layout.addWidget(self.state_label)
        layout.addWidget(self.hardware_label)
        layout.addWidget(self.table)
        layout.addWidget(self.empty_label)
        self.startable_box = QComboBox()
        self.startable_box.setToolTip("The models this machine can start by name")
        self.start_button = QPushButton("Start")
        self.start_button.setToolTip("Start the model picked on this machine")
        self.start_button.clicked.connect(self._on_start_clicked)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the instance picked in the table")
        self.stop_button.clicked.connect(self._on_stop_clicked)
        self.unpair_button = QPushButton("Unpair…")
        self.unpair_button.setToolTip("Forget this machine here, and tell it to forget this one")
        self.unpair_button.clicked.connect(lambda: self.unpair_requested.emit(self.peer_id))
        self._busy = False
        self._reachable = False
        if peer_id is not None:
            actions = QHBoxLayout()
            actions.addWidget(QLabel("Start a model:"))
            actions.addWidget(self.startable_box, 1)
            actions.addWidget(self.start_button)
            actions.addSpacing(16)
            actions.addWidget(self.stop_button)
            actions.addStretch(1)
            actions.addWidget(self.unpair_button)
            layout.addLayout(actions)
        self._update_buttons()

    # -- what it shows ---------------------------------------------------------------------

    def show_local(
        self, name: str, hardware: HardwareInventory | None, instances: list[InstanceInfo]
    ) -> None:
        self.name_label.setText(f"{name} (this machine)" if name else "This machine")
        self.state_label.setText("Serves the gateway here.")
        self.hardware_label.setText(hardware_line(hardware))
        self._show_instances(instances, [])

    def show_peer(self, peer: PeerInfo, seen: PeerSeen | None) -> None:
        self.peer_name = peer.name
        self.name_label.setText(peer.name)
        self.state_label.setText(reachability(peer))
        self._reachable = bool(peer.reachable)
        state = seen.state if seen is not None else None
        if state is None:
            self.hardware_label.setText("Hardware not known: the machine has not answered.")
            self._show_instances([], [])
            self._show_startable([])
        else:
            self.hardware_label.setText(hardware_line(state.hardware))
            self._show_instances(state.instances, state.load)
            self._show_startable(state.startable)
        self._update_buttons()

    def set_busy(self, busy: bool) -> None:
        """While a start, stop or unpair of this card runs, its buttons wait."""
        self._busy = busy
        self._update_buttons()

    def selected_instance(self) -> str:
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return ""
        item = self.table.item(rows[0].row(), 0)
        return str(item.data(ID_ROLE)) if item is not None else ""

    def instance_ids(self) -> list[str]:
        found = []
        for row in range(self.table.rowCount()):
            item = self.table.item(row, 0)
            if item is not None:
                found.append(str(item.data(ID_ROLE)))
        return found

    def select_instance(self, instance: str) -> None:
        for row in range(self.table.rowCount()):
            item = self.table.item(row, 0)
            if item is not None and item.data(ID_ROLE) == instance:
                self.table.selectRow(row)
                return

    def _show_instances(self, instances: list[InstanceInfo], load: list[PeerLoad]) -> None:
        kept = self.selected_instance()
        self.table.blockSignals(True)
        try:
            self.table.setRowCount(len(instances))
            for row, info in enumerate(instances):
                cells = (
                    model_text(info),
                    info.engine.value,
                    info.status.value,
                    load_text(load, info.id),
                )
                for column, text in enumerate(cells):
                    item = QTableWidgetItem(text)
                    item.setData(ID_ROLE, info.id)
                    if column == 0:
                        item.setToolTip(f"{info.model or ''}\ninstance {info.id}".strip())
                    self.table.setItem(row, column, item)
            self.table.clearSelection()
            if kept:
                self.select_instance(kept)
        finally:
            self.table.blockSignals(False)
        self._fit_table()
        self.table.setVisible(bool(instances))
        self.empty_label.setVisible(not instances)
        if kept and self.selected_instance() != kept:
            # The instance picked is gone: its charts go with it.
            self._on_selection_changed()
        self._update_buttons()

    def _fit_table(self) -> None:
        """As tall as its rows (a few at most, then it scrolls): no empty space in a card."""
        rows = min(self.table.rowCount(), MAX_ROWS_SHOWN)
        height = self.table.horizontalHeader().sizeHint().height() + 2 * self.table.frameWidth()
        height += sum(self.table.rowHeight(r) for r in range(rows))
        self.table.setFixedHeight(height)

    def _show_startable(self, models: list[str]) -> None:
        current = self.startable_box.currentText()
        if [self.startable_box.itemText(i) for i in range(self.startable_box.count())] != models:
            self.startable_box.clear()
            self.startable_box.addItems(models)
            if current in models:
                self.startable_box.setCurrentText(current)
        self.startable_box.setPlaceholderText("nothing to start" if not models else "")

    def _update_buttons(self) -> None:
        usable = self.peer_id is not None and self._reachable and not self._busy
        self.startable_box.setEnabled(usable and self.startable_box.count() > 0)
        self.start_button.setEnabled(usable and self.startable_box.count() > 0)
        self.stop_button.setEnabled(usable and bool(self.selected_instance()))
        self.unpair_button.setEnabled(self.peer_id is not None and not self._busy)

    # -- what it asks ----------------------------------------------------------------------

    def _on_selection_changed(self) -> None:
        self._update_buttons()
        if self.peer_id is not None:
            self.instance_selected.emit(self.peer_id, self.selected_instance())

    def _on_start_clicked(self) -> None:
        model = self.startable_box.currentText()
        if self.peer_id is not None and model:
            self.start_requested.emit(self.peer_id, model)

    def _on_stop_clicked(self) -> None:
        instance = self.selected_instance()
        if self.peer_id is not None and instance:
            self.stop_requested.emit(self.peer_id, instance)
