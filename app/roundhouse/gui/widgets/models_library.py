"""The local model library: what is on disk and in Ollama, with import, delete and start."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QItemSelection, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.engines import EngineId, EnginesOverview, EngineSpec, LaunchStyle
from roundhouse.api.fit import FitQuery
from roundhouse.api.instances import InstanceInfo
from roundhouse.api.library import DeleteResult, ImportRequest, LibraryList, LibraryModel
from roundhouse.base.units import format_bytes
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.dialogs.start_dialog import StartDialog
from roundhouse.gui.dialogs.use_with_dialog import UseWithDialog
from roundhouse.gui.icons import set_icon
from roundhouse.gui.widgets.confirm import ask_to_confirm
from roundhouse.gui.widgets.import_gguf import gguf_file_dialog
from roundhouse.gui.widgets.models_badge import BadgeDelegate, BadgeTableModel, visible_rows
from roundhouse.gui.widgets.models_fit import FitCache, library_key
from roundhouse.gui.widgets.models_library_empty import LibraryEmptyHint
from roundhouse.gui.widgets.models_library_rows import (
    HEADERS,
    RIGHT_ALIGNED,
    STATUS_COLUMN,
    deletion_in_words,
    library_row,
)
from roundhouse.gui.widgets.models_library_running import LibraryRunning
from roundhouse.gui.widgets.table_view import table_view

VISIBLE_SETTLE_MS = 150


def installed_engines(overview: EnginesOverview | None) -> list[EngineSpec]:
    """Engines the daemon found and can start, in the catalog's order (as the Engines page)."""
    if overview is None:
        return []
    found = {hit.id for hit in overview.detection.found}
    return [s for s in overview.catalog.engines if s.launch != LaunchStyle.ATTACH and s.id in found]


class LibraryView(QWidget):
    """Lists when first shown and when asked; a finished download marks it stale."""

    started = Signal(object)  # InstanceInfo, from the start dialog
    chat_requested = Signal(str)  # the model to open the Chat page on

    def __init__(
        self,
        bridge: DaemonBridge,
        calls: ModelsCalls,
        fits: FitCache,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        # One action at a time (import, delete): the buttons wait while it runs.
        self._ops = Ops(self, on_busy=self._update_actions)
        self._bridge = bridge
        self._calls = calls
        self._fits = fits
        self._listing: Call | None = None
        self._stale = True
        self.listed: LibraryList | None = None
        self.confirm_box: QMessageBox | None = None
        self.file_dialog: QFileDialog | None = None
        self.start_dialog: StartDialog | None = None
        self.use_with_dialog: UseWithDialog | None = None
        self.last_deleted: DeleteResult | None = None

        self.models = BadgeTableModel(HEADERS, RIGHT_ALIGNED, self)
        self.view: QTableView = table_view(self.models)
        self.view.setItemDelegateForColumn(self.models.badge_column, BadgeDelegate(self))
        self.view.selectionModel().selectionChanged.connect(self._on_view_selection_changed)
        # Each row says whether an engine runs its model, with Chat and Stop beside.
        self.running = LibraryRunning(bridge, self.view, self.models, STATUS_COLUMN, self)
        self.running.chat_requested.connect(self.chat_requested)
        self.running.said.connect(self._say)
        self._starting: LibraryModel | None = None
        self.view.doubleClicked.connect(lambda _: self.start_selected())
        self.refresh_button = QPushButton("Refresh")
        set_icon(self.refresh_button, "refresh-cw")
        self.refresh_button.setToolTip("Look through the model folders and Ollama again")
        self.refresh_button.clicked.connect(lambda: self.refresh(rescan=True))
        self.import_button = QPushButton("Import GGUF…")
        set_icon(self.import_button, "download")
        self.import_button.setToolTip("Copy a .gguf file into Roundhouse's library folder")
        self.import_button.clicked.connect(self.choose_import)
        self.delete_button = QPushButton("Delete…")
        set_icon(self.delete_button, "trash-2")
        self.delete_button.clicked.connect(self.delete_selected)
        self.start_button = QPushButton("Start…")
        set_icon(self.start_button, "play")
        self.start_button.setToolTip("Start an engine with this model")
        self.start_button.clicked.connect(self.start_selected)
        self.use_button = QPushButton("Use with…")
        self.use_button.setToolTip(
            "Settings that point coding agents, SDKs and apps at this model through the gateway"
        )
        self.use_button.clicked.connect(self.open_use_with_selected)
        buttons = QHBoxLayout()
        for button in (self.refresh_button, self.import_button, self.delete_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.use_button)
        buttons.addWidget(self.start_button)
        self.status_label = QLabel("Not listed yet.")
        self.status_label.setObjectName("hint")
        self.status_label.setWordWrap(True)
        self.message_label = QLabel()
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # Empty, the Library says how to add models, with a button for each way.
        self.empty_hint = LibraryEmptyHint(bridge)
        self.empty_hint.import_requested.connect(self.choose_import)
        self.empty_hint.folder_added.connect(lambda _: self.refresh(rescan=True))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.empty_hint)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.status_label)
        layout.addWidget(self.message_label)
        layout.addLayout(buttons)

        self._visible_timer = QTimer(self)
        self._visible_timer.setSingleShot(True)
        self._visible_timer.setInterval(VISIBLE_SETTLE_MS)
        self._visible_timer.timeout.connect(self.request_visible_fits)
        self.view.verticalScrollBar().valueChanged.connect(self._settle_visible)
        fits.changed.connect(self._on_fits_changed)
        bridge.state_changed.connect(self._update_actions)
        bridge.instances_changed.connect(self._show_rows)
        # The daemon lists new GGUF files from their first metadata and reads the rest just
        # after; the change feed brings the list again as it changes (headers read, a scan,
        # an import or a delete made anywhere).
        bridge.library_changed.connect(self._on_library_changed)
        self._update_actions()

    # -- listing ------------------------------------------------------------------------

    def mark_stale(self) -> None:
        """Something changed on disk: list again now if shown, else when next shown."""
        self._stale = True
        if self.isVisible():
            self.refresh()

    def refresh_if_stale(self) -> None:
        if self._stale:
            self.refresh()

    def refresh(self, *, rescan: bool = False) -> None:
        if self._bridge.state != ConnectionState.CONNECTED or self._listing is not None:
            return
        self._stale = False
        self.status_label.setText("Looking through the model folders…")
        self._listing = call = self._calls.library(refresh=rescan)
        self._ops.run(
            call,
            self._on_listed,
            on_failure=lambda failure: self.status_label.setText(f"Not listed: {failure}"),
        )
        call.finished.connect(self._on_listing_finished)
        self._update_actions()

    def _on_listed(self, listed: LibraryList) -> None:
        self.listed = listed
        self.empty_hint.show_for(listed)
        # Empty, the empty state takes the table's place.
        self.view.setVisible(self.empty_hint.isHidden())
        self._show_rows()
        for model in listed.models:
            self.models.set_badge(model.id, self._fits.badge(library_key(model.id)))
        total = sum(model.size_bytes for model in listed.models)
        count = len(listed.models)
        words = [f"{count} model{'s' if count != 1 else ''}, {format_bytes(total)} on disk"]
        words += [
            f"{place.location}: {place.error}"
            for place in listed.places
            if place.error and place.available
        ]
        if listed.checking:
            words.append(
                f"reading {listed.checking} more header{'s' if listed.checking != 1 else ''}…"
            )
        self.status_label.setText(" · ".join(words))
        self._visible_timer.start()

    def _on_library_changed(self, listed: LibraryList) -> None:
        """Shown at once while seen (a listing on its way answers as new); listed again when
        next shown otherwise."""
        if not self.isVisible():
            self._stale = True
        elif self._listing is None:
            self._stale = False
            self._on_listed(listed)

    def _on_listing_finished(self) -> None:
        self._listing = None
        self._update_actions()

    def _show_rows(self, *_: object) -> None:
        """The listed models, each with the state of the engine that runs it (if one does)."""
        models = self.listed.models if self.listed else []
        self.models.set_rows([library_row(m, self.running.status_of(m)) for m in models])
        self.running.update(models)

    def request_visible_fits(self) -> None:
        for index in visible_rows(self.view):
            model_id = self.models.row(index).key
            self._fits.request(library_key(model_id), FitQuery(library_id=model_id))

    def select_model(self, model_id: str) -> bool:
        row = self.models.row_of(model_id)
        if row is not None:
            self.view.selectRow(row)
        return row is not None

    def selected(self) -> LibraryModel | None:
        rows = self.view.selectionModel().selectedRows()
        item = self.models.row(rows[0].row()).item if rows else None
        return item if isinstance(item, LibraryModel) else None

    def find_model(self, predicate: Callable[[LibraryModel], bool]) -> LibraryModel | None:
        """The first model listed for which `predicate(model)` holds."""
        models = self.listed.models if self.listed else []
        return next((m for m in models if predicate(m)), None)

    def open_use_with_selected(self) -> UseWithDialog | None:
        """Use with… for the chosen model, by the name requests use for it (ADR 24)."""
        model = self.selected()
        if model is None:
            return None
        if self.use_with_dialog is not None:
            self.use_with_dialog.close()
        dialog = UseWithDialog(self._bridge, model.served_id or model.id, self.window())
        dialog.finished.connect(self._on_use_with_dialog_finished)
        self.use_with_dialog = dialog
        # open(), not exec(): a nested event loop would stall qasync's tasks.
        dialog.open()
        return dialog

    def _on_use_with_dialog_finished(self) -> None:
        dialog, self.use_with_dialog = self.use_with_dialog, None
        if dialog is not None:
            dialog.deleteLater()

    # -- import -------------------------------------------------------------------------

    def choose_import(self) -> None:
        box = gguf_file_dialog(self)
        box.fileSelected.connect(self.import_file)
        box.finished.connect(self._on_file_dialog_finished)
        self.file_dialog = box
        # open(), not exec(): a nested event loop would stall qasync's tasks.
        box.open()

    def import_file(self, path: str) -> None:
        if self._ops.busy or not path:
            return
        name = Path(path).name
        self._act(
            f"Importing {name}…",
            self._calls.import_gguf(ImportRequest(path=path)),
            lambda model: self._say(f"Imported {model.name}."),
        )

    def _on_file_dialog_finished(self) -> None:
        box, self.file_dialog = self.file_dialog, None
        if box is not None:
            box.deleteLater()

    # -- delete -------------------------------------------------------------------------

    def delete_selected(self) -> None:
        """Ask the daemon what deleting would free, then ask the user."""
        model = self.selected()
        if model is None or self._ops.busy:
            return
        self._act(
            f"Working out what deleting {model.name} frees…",
            self._calls.delete(model.id, dry_run=True),
            self._confirm_delete,
        )

    def _confirm_delete(self, plan: DeleteResult) -> None:
        self._say("")
        self.confirm_box = ask_to_confirm(
            self.window(),
            title="Delete a model",
            text=f"Delete {plan.name}? This frees {format_bytes(plan.freed_bytes)}.",
            detail=deletion_in_words(plan),
            action="Delete",
            on_confirm=lambda: self._delete(plan),
            on_closed=self._forget_confirm_box,
        )

    def _delete(self, plan: DeleteResult) -> None:
        self._act(f"Deleting {plan.name}…", self._calls.delete(plan.id), self._on_deleted)

    def _on_deleted(self, result: DeleteResult) -> None:
        self.last_deleted = result
        note = f" {result.note}" if result.note else ""
        self._say(f"Deleted {result.name}: freed {format_bytes(result.freed_bytes)}.{note}")

    def _forget_confirm_box(self) -> None:
        self.confirm_box = None

    # -- start --------------------------------------------------------------------------

    def start_selected(self) -> StartDialog | None:
        """The start dialog, with the engine that serves this model and the model filled in."""
        model = self.selected()
        if model is None:
            return None
        if self.start_dialog is not None:
            self.start_dialog.raise_()
            return self.start_dialog
        engines = installed_engines(self._bridge.engines)
        found = {spec.id for spec in engines}
        engine = next((e for e in model.engines if e in found), None)
        if engine is None:
            can = ", ".join(e.value for e in model.engines) or "no engine Roundhouse knows"
            self._say(
                f"No installed engine runs {model.name} ({can}): install one on the Engines page."
            )
            return None
        dialog = StartDialog(self._bridge, engines, engine, self.window(), offer_chat=True)
        dialog.model_edit.setText(
            model.name if engine == EngineId.OLLAMA else model.path or model.name
        )
        dialog.started.connect(self._on_start_dialog_started)
        dialog.finished.connect(self._on_start_dialog_finished)
        self.start_dialog = dialog
        self._starting = model
        dialog.open()
        return dialog

    def _on_start_dialog_started(self, info: InstanceInfo) -> None:
        model, dialog = self._starting, self.start_dialog
        name = model.name if model else info.model or "the model"
        open_chat = dialog is not None and dialog.open_chat_when_ready
        if open_chat:
            self._say(f"Starting {name}: the chat opens when it is ready.")
        else:
            self._say(f"Starting {name}: its row says when it is ready.")
        self.running.follow(info, model, name, open_chat=open_chat)
        self.started.emit(info)
        self._show_rows()

    def _on_start_dialog_finished(self) -> None:
        dialog, self.start_dialog = self.start_dialog, None
        if dialog is not None:
            dialog.deleteLater()

    # -- helpers ------------------------------------------------------------------------

    def _act(self, doing: str, call: Call, on_success: Callable[[Any], None]) -> None:
        """One action at a time: its failure said in the message line. The list after it
        comes by the change feed (the daemon publishes the library it changed)."""
        self._say(doing)
        self._ops.run(
            call,
            on_success,
            on_failure=lambda failure: self._on_action_failed(doing, failure),
            busy=True,
        )

    def _on_action_failed(self, doing: str, failure: Failure) -> None:
        self._say(f"{doing.rstrip('…')} failed: {failure}")

    def _on_fits_changed(self, key: str) -> None:
        model_id = key.removeprefix("library:")
        if key.startswith("library:") and self.models.row_of(model_id) is not None:
            self.models.set_badge(model_id, self._fits.badge(key))

    def _on_view_selection_changed(self, _selected: QItemSelection, _: QItemSelection) -> None:
        model = self.selected()
        if model is not None and model.error:
            self._say(f"{model.name}: {model.error}")
        self._update_actions()

    def _settle_visible(self, *_: object) -> None:
        """Estimates follow once scrolling rests (the signals' arguments are not a delay)."""
        self._visible_timer.start()

    def _say(self, text: str) -> None:
        self.message_label.setText(text)

    def _update_actions(self, *_: object) -> None:
        connected = self._bridge.state == ConnectionState.CONNECTED
        idle = connected and not self._ops.busy
        chosen = self.selected() is not None
        self.refresh_button.setEnabled(connected and self._listing is None)
        self.import_button.setEnabled(idle)
        self.delete_button.setEnabled(idle and chosen)
        self.start_button.setEnabled(connected and chosen)
        self.use_button.setEnabled(connected and chosen)
