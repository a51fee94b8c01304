"""Step 3: a starter model chosen to fit this machine, downloaded with progress if need be,
or a model already on this machine, or a GGUF file imported into the library."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
)

from roundhouse.api.library import LibraryModel
from roundhouse.api.starters import StarterList, StarterOption
from roundhouse.base.units import format_bytes
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.first_run.download_panel import DownloadPanel
from roundhouse.gui.first_run.state import GuideState, StepPage
from roundhouse.gui.first_run.words import download_words, fit_text, shown_options, state_text
from roundhouse.gui.widgets.import_gguf import gguf_file_dialog

COLUMNS = ("Model", "Size", "On this machine", "State")
ID_ROLE = Qt.ItemDataRole.UserRole
LIBRARY_PREFIX = "library:"
IMPORT_TEXT = "Import a model file…"


class ModelStep(StepPage):
    def __init__(self, state: GuideState) -> None:
        super().__init__(
            state,
            "A starter model",
            "The largest small model that fits comfortably is chosen; models already here "
            "come first. Sizes come from Hugging Face, or from Roundhouse's list offline.",
        )
        self._ops = Ops(self)
        self.table = QTreeWidget()
        self.table.setHeaderLabels(COLUMNS)
        self.table.setRootIsDecorated(False)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.setMinimumHeight(150)
        self.table.itemSelectionChanged.connect(self._on_selection_changed)
        self.reason = QLabel()
        self.reason.setWordWrap(True)
        self.about = QLabel()
        self.about.setObjectName("hint")
        self.about.setWordWrap(True)
        self.download_button = QPushButton("Download")
        self.download_button.clicked.connect(self.download)
        self.import_button = QPushButton(IMPORT_TEXT)
        self.import_button.setToolTip(
            "Add a .gguf file from this machine to the library (hard-linked or copied), "
            "as Models ▸ Library ▸ Import GGUF… does"
        )
        self.import_button.clicked.connect(self.choose_import)
        row = QHBoxLayout()
        row.addWidget(self.about, 1)
        row.addWidget(self.import_button, 0, Qt.AlignmentFlag.AlignTop)
        row.addWidget(self.download_button, 0, Qt.AlignmentFlag.AlignTop)
        self.panel = DownloadPanel(state.calls)
        self.panel.ended.connect(self._on_download_ended)
        self.body.addWidget(self.table, 1)
        self.body.addWidget(self.reason)
        self.body.addLayout(row)
        self.body.addWidget(self.panel)
        self.starters: StarterList | None = None
        self._loading_for: str | None = None
        self.file_dialog: QFileDialog | None = None
        self.importing: Call | None = None
        # After an import, the library id to select once the list is read again.
        self._select_library_id: str | None = None

    # -- the list ---------------------------------------------------------------------------

    def initializePage(self) -> None:
        engine = self.state.engine
        if engine is None:
            return
        if self.starters is not None and self.starters.engine == engine.engine:
            return
        self.load(offline=False)

    def load(self, *, offline: bool) -> None:
        engine = self.state.engine
        assert engine is not None
        self._loading_for = engine.engine.value
        self.say("Sizing the starter models for this machine…" if not offline else "Looking…")
        self.download_button.setEnabled(False)
        call = self.state.calls.starters(engine.engine.value, offline=offline)
        self._ops.run(
            call,
            self._on_downloaded_listed if offline else self.show_starters,
            on_failure=self._on_starters_failed,
        )
        self.completeChanged.emit()

    def show_starters(self, starters: StarterList) -> None:
        self._loading_for = None
        self.starters = starters
        offline = "" if starters.online else f"Offline: {starters.offline_reason} "
        if starters.recommended is not None:
            self.say(f"{offline}Choose a model; the recommended one is selected.")
        else:
            self.say(f"{offline}No model here can be used yet: import a model file.".lstrip())
        self.reason.setText(starters.reason)
        keep = self.state.option.id if self.state.option else starters.recommended
        if self._select_library_id is not None:
            keep = self._imported_option_id(starters, self._select_library_id) or keep
            self._select_library_id = None
        self.table.clear()
        for option in shown_options(starters):
            texts = [
                option.title,
                format_bytes(option.size_bytes),
                fit_text(option),
                state_text(option, starters.online),
            ]
            item = QTreeWidgetItem(texts)
            item.setData(0, ID_ROLE, option.id)
            item.setToolTip(0, option.note or option.title)
            item.setToolTip(2, option.fit)
            self.table.addTopLevelItem(item)
            if option.id == keep:
                item.setSelected(True)
                self.table.setCurrentItem(item)
        for column in range(1, len(COLUMNS)):
            self.table.resizeColumnToContents(column)
        self._on_selection_changed()

    def select(self, option_id: str) -> bool:
        for item in self._rows():
            if item.data(0, ID_ROLE) == option_id:
                self.table.setCurrentItem(item)
                item.setSelected(True)
                return True
        return False

    def shown_ids(self) -> list[str]:
        return [str(item.data(0, ID_ROLE)) for item in self._rows()]

    def _rows(self) -> list[QTreeWidgetItem]:
        count = self.table.topLevelItemCount()
        rows = (self.table.topLevelItem(index) for index in range(count))
        return [item for item in rows if item is not None]

    def selected(self) -> StarterOption | None:
        items = self.table.selectedItems()
        if not items or self.starters is None:
            return None
        wanted = items[0].data(0, ID_ROLE)
        return next((o for o in self.starters.options if o.id == wanted), None)

    def isComplete(self) -> bool:
        """Next is offered unless something is under way, or the chosen starter can be
        downloaded now (Download is the way on). With nothing to start (offline, no model
        here), the chat step says what to do instead of leaving a dead end."""
        if self.panel.running or self._loading_for is not None or self.importing is not None:
            return False
        option = self.state.option
        if option is not None and option.downloaded and option.model is not None:
            return True
        return not self._can_download(option)

    def _can_download(self, option: StarterOption | None) -> bool:
        online = self.starters.online if self.starters else False
        return (
            option is not None
            and not option.downloaded
            and option.problem is None
            and online
            and not self.panel.running
        )

    def retry(self) -> None:
        self.clear_problem()
        self.load(offline=False)

    # -- the download -----------------------------------------------------------------------

    def download(self) -> None:
        option = self.selected()
        if option is None or option.downloaded or self.panel.running:
            return
        self.clear_problem()
        self.download_button.setEnabled(False)
        self.table.setEnabled(False)
        self.say(f"Downloading {option.title}…")
        self.panel.start(option)
        self.import_button.setEnabled(False)
        self.completeChanged.emit()

    def _on_download_ended(self, problem: str) -> None:
        self.table.setEnabled(True)
        if problem:
            self.say("")
            self.show_problem("The download did not finish", problem)
            self._on_selection_changed()
            return
        # The library lists it now: ask again (without the Hub) for where it is.
        self.load(offline=True)

    def _on_downloaded_listed(self, listed: StarterList) -> None:
        """After a download or an import: the same list, with what the library now has
        marked so and any new model of it added."""
        before = self.starters
        if before is None or not before.online:
            self.show_starters(listed)
            return
        now = {o.id: o for o in listed.options if o.downloaded}
        options = [now.pop(o.id, o) for o in before.options]
        options += now.values()
        self.show_starters(before.model_copy(update={"options": options}))

    # -- an import ----------------------------------------------------------------------------

    def choose_import(self) -> None:
        """The Library's file dialog; the chosen file goes through the Library's import."""
        if self.importing is not None or self.file_dialog is not None:
            return
        box = gguf_file_dialog(self)
        box.fileSelected.connect(self.import_file)
        box.finished.connect(self._on_file_dialog_finished)
        self.file_dialog = box
        box.open()

    def import_file(self, path: str) -> None:
        if self.importing is not None or not path:
            return
        self.clear_problem()
        self.say(f"Importing {Path(path).name}…")
        self.importing = call = self.state.calls.import_gguf(path)
        self._ops.run(call, self._on_imported, on_failure=self._on_import_failed)
        self._update_buttons()

    def _on_imported(self, model: LibraryModel) -> None:
        self.importing = None
        self._select_library_id = model.id
        # The list again, without the Hub: the library now has it.
        self.load(offline=True)

    def _on_import_failed(self, failure: Failure) -> None:
        self.importing = None
        self.say("")
        self.show_problem("The model file was not imported", failure.detail)
        self._update_buttons()

    def _on_file_dialog_finished(self) -> None:
        box, self.file_dialog = self.file_dialog, None
        if box is not None:
            box.deleteLater()

    @staticmethod
    def _imported_option_id(starters: StarterList, library_id: str) -> str | None:
        """The option the imported file is: a starter it matches, or its library entry."""
        for option in starters.options:
            if option.library_id == library_id or option.id == LIBRARY_PREFIX + library_id:
                return option.id
        return None

    def _on_starters_failed(self, failure: Failure) -> None:
        self._loading_for = None
        self.say("")
        self.show_problem("Could not list the starter models", failure)

    def _on_selection_changed(self) -> None:
        option = self.selected()
        self.state.option = option
        if self.state.served is not None and (
            option is None or self.state.served.instance.model != option.model
        ):
            self.state.served = None
        online = self.starters.online if self.starters else False
        self.about.setText(download_words(option, online) if option else "")
        self._update_buttons()

    def _update_buttons(self) -> None:
        option = self.state.option
        self.download_button.setEnabled(self._can_download(option) and self.importing is None)
        self.download_button.setVisible(option is None or not option.downloaded)
        self.import_button.setEnabled(self.importing is None and not self.panel.running)
        self.completeChanged.emit()
