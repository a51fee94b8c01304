"""The empty Library's notice: how to add models, with a button for each way (import a file,
add a models folder, download from Search). Adding a folder saves it in the settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog, QWidget

from roundhouse.api.library import LibraryList
from roundhouse.api.settings import Settings
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.calls.settings import patch_settings
from roundhouse.gui.widgets.empty_state import EmptyState

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge

EMPTY_TEXT = (
    "No models on this machine yet. Add one: import a GGUF file you have, add a folder that "
    "holds models (they are listed where they are, never moved), or download one from Search."
)
IMPORT_TEXT = "Import a model file…"
FOLDER_TEXT = "Add a models folder…"
SEARCH_TEXT = "Search Hugging Face"


class LibraryEmptyHint(EmptyState):
    """Shown while the listing is empty. `import_requested` and `search_requested` are the
    Library's and the page's to act on; a folder is added here and `folder_added` says so."""

    import_requested = Signal()
    search_requested = Signal()
    folder_added = Signal(str)

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(icon="boxes", parent=parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self.folder_dialog: QFileDialog | None = None
        self.saving: Call | None = None
        self.import_button = self.add_action(IMPORT_TEXT, self.import_requested.emit)
        self.folder_button = self.add_action(FOLDER_TEXT, self.choose_folder)
        self.search_button = self.add_action(SEARCH_TEXT, self.search_requested.emit)

    def show_for(self, listed: LibraryList | None) -> None:
        """Shown when the daemon listed no model, hidden otherwise."""
        if listed is not None and not listed.models:
            self.show_text(EMPTY_TEXT)
        else:
            self.hide()

    def choose_folder(self) -> None:
        if self.folder_dialog is not None or self.saving is not None:
            return
        box = QFileDialog(self.window(), "A folder of models")
        box.setFileMode(QFileDialog.FileMode.Directory)
        box.setOption(QFileDialog.Option.ShowDirsOnly, True)
        box.fileSelected.connect(self.add_folder)
        box.finished.connect(self._on_dialog_finished)
        self.folder_dialog = box
        # open(), not exec(): a nested event loop would stall qasync's tasks.
        box.open()

    def add_folder(self, folder: str) -> None:
        """Add `folder` to the library's folders in the settings (as Settings ▸ Models does)."""
        if not folder or self.saving is not None:
            return

        def change(settings: Settings) -> Settings:
            folders = list(settings.models.library_folders)
            if folder not in folders:
                folders.append(folder)
            models = settings.models.model_copy(update={"library_folders": folders})
            return settings.model_copy(update={"models": models})

        self.folder_button.setEnabled(False)
        self.show_text(f"Adding {folder} to the library's folders…")
        self.saving = call = patch_settings(self._bridge, "add a models folder", change)
        self._ops.run(
            call, lambda _: self.folder_added.emit(folder), on_failure=self._on_save_failed
        )
        call.finished.connect(self._on_save_finished)

    def _on_save_failed(self, failure: Failure) -> None:
        self.show_text(f"The folder was not added: {failure.detail}")

    def _on_save_finished(self) -> None:
        self.saving = None
        self.folder_button.setEnabled(True)

    def _on_dialog_finished(self) -> None:
        box, self.folder_dialog = self.folder_dialog, None
        if box is not None:
            box.deleteLater()
