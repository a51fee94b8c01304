"""A list of paths with Add, Browse and Remove, for the Settings page (Pythons, model folders).

Also the small pieces the page's sections share: a hint label, and a form's bounds taken from
the settings schema.
"""

from __future__ import annotations

from pydantic import BaseModel
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QVBoxLayout,
    QWidget,
)


def hint(text: str = "") -> QLabel:
    """A wrapped line in the hint style, under a setting."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setObjectName("hint")
    return label


def schema_bounds(model: type[BaseModel], name: str) -> tuple[int, int]:
    """The bounds the schema gives a number setting: the form follows the schema."""
    field = model.model_json_schema()["properties"][name]
    return int(field.get("minimum", 0)), int(field.get("maximum", 1_000_000))


class PathListEditor(QWidget):
    """Paths in the order added, each once; `changed` when one is added or removed.

    Browse opens a file dialog of this machine: the paths are the daemon's, which is the same
    machine unless the app is attached to a remote daemon (then type them)."""

    changed = Signal()

    def __init__(
        self, placeholder: str, dialog_title: str, *, folders: bool, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._dialog_title = dialog_title
        self._folders = folders
        self.dialog: QFileDialog | None = None
        self.list = QListWidget()
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.setMaximumHeight(110)
        self.list.itemSelectionChanged.connect(self._update_actions)
        self.edit = QLineEdit()
        self.edit.setPlaceholderText(placeholder)
        self.edit.textChanged.connect(self._update_actions)
        self.edit.returnPressed.connect(lambda: self.add())
        self.add_button = QPushButton("Add")
        self.add_button.clicked.connect(lambda: self.add())
        self.browse_button = QPushButton("Browse…")
        self.browse_button.clicked.connect(self.browse)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove)
        row = QHBoxLayout()
        row.addWidget(self.edit, 1)
        row.addWidget(self.add_button)
        row.addWidget(self.browse_button)
        row.addWidget(self.remove_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.list)
        layout.addLayout(row)
        self._update_actions()

    def paths(self) -> list[str]:
        return [self.list.item(row).text() for row in range(self.list.count())]

    def set_paths(self, paths: list[str]) -> None:
        self.list.clear()
        self.list.addItems(paths)
        self._update_actions()

    def add(self, path: str | None = None) -> None:
        text = (path or self.edit.text()).strip()
        if text and text not in self.paths():
            self.list.addItem(text)
        self.edit.clear()
        self.changed.emit()

    def browse(self) -> None:
        dialog = QFileDialog(self.window(), self._dialog_title)
        mode = (
            QFileDialog.FileMode.Directory if self._folders else QFileDialog.FileMode.ExistingFile
        )
        dialog.setFileMode(mode)
        if self._folders:
            dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        dialog.fileSelected.connect(self.add)
        dialog.finished.connect(self._on_dialog_finished)
        self.dialog = dialog
        # open(), not exec(): a nested event loop would stall qasync's tasks.
        dialog.open()

    def remove(self) -> None:
        for item in self.list.selectedItems():
            self.list.takeItem(self.list.row(item))
        self.changed.emit()

    def _update_actions(self) -> None:
        self.add_button.setEnabled(bool(self.edit.text().strip()))
        self.remove_button.setEnabled(bool(self.list.selectedItems()))

    def _on_dialog_finished(self) -> None:
        if self.dialog is not None:
            self.dialog.deleteLater()
            self.dialog = None
