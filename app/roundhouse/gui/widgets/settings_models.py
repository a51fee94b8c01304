"""The Models section of the Settings page: where downloads go (with the free space there) and
the folders the library lists besides the Hugging Face cache. Saved with the page; the daemon
refuses a folder that does not exist or that it cannot write to, in words."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.hardware import DiskInfo
from roundhouse.api.settings import Settings
from roundhouse.base.units import format_bytes
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.widgets.settings_path_list import PathListEditor, hint

MODELS_DIR_HINT = (
    "Downloads go here, in the Hugging Face cache's layout, so vLLM and mlx-lm can load them "
    "too. Empty keeps the Hugging Face cache (HF_HOME is honoured). The folder must exist. "
    "Downloads and the library use a new folder at once; engines that find models by name "
    "in the cache (vLLM, mlx-lm, SGLang) from the daemon's next start."
)
FOLDERS_HINT = (
    "Folders of GGUF files or safetensors models the library lists too (they are read, never "
    "moved). LM Studio's folder and Ollama's models are found without adding them."
)
# Asked once typing pauses: one request per folder, not per key.
SPACE_DELAY_MS = 400


def space_words(disk: DiskInfo) -> str:
    return f"{format_bytes(disk.free_bytes)} free of {format_bytes(disk.total_bytes)} there"


class ModelsPlacesSection(QGroupBox):
    """`apply()` puts the form into settings; `changed` says the form moved."""

    changed = Signal()

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__("Models", parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self._space_call: Call | None = None
        self.dialog: QFileDialog | None = None
        self.disk: DiskInfo | None = None
        self.models_dir = QLineEdit()
        self.models_dir.setPlaceholderText("Empty: the Hugging Face cache")
        self.models_dir.textChanged.connect(self._on_models_dir_changed)
        self.browse_button = QPushButton("Browse…")
        self.browse_button.clicked.connect(self.browse)
        self.space = hint()
        self.space.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._space_timer = QTimer(self)
        self._space_timer.setSingleShot(True)
        self._space_timer.setInterval(SPACE_DELAY_MS)
        self._space_timer.timeout.connect(self.refresh_space)
        self.folders = PathListEditor(
            "/path/to/a/folder of models (on the daemon's machine)",
            "A folder of models",
            folders=True,
        )
        self.folders.changed.connect(self._on_changed)

        row = QHBoxLayout()
        row.addWidget(self.models_dir, 1)
        row.addWidget(self.browse_button)
        where = QVBoxLayout()
        where.addLayout(row)
        where.addWidget(self.space)
        where.addWidget(hint(MODELS_DIR_HINT))
        folders = QVBoxLayout()
        folders.addWidget(self.folders)
        folders.addWidget(hint(FOLDERS_HINT))
        form = QFormLayout(self)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        form.addRow("Download models to:", where)
        form.addRow("Also list models in:", folders)

    def show_settings(self, settings: Settings) -> None:
        self.models_dir.setText(settings.models_dir or "")
        self.folders.set_paths(settings.models.library_folders)
        self.refresh_space()

    def apply(self, settings: Settings) -> Settings:
        """`settings` with the models' places as the form has them, unchecked."""
        models = settings.models.model_copy(update={"library_folders": self.folders.paths()})
        models_dir = self.models_dir.text().strip() or None
        return settings.model_copy(update={"models_dir": models_dir, "models": models})

    def browse(self) -> None:
        dialog = QFileDialog(self.window(), "Where models are downloaded")
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        dialog.fileSelected.connect(self.models_dir.setText)
        dialog.finished.connect(self._on_dialog_finished)
        self.dialog = dialog
        dialog.open()

    def refresh_space(self) -> None:
        """Ask the daemon for the free space where the form says models go."""
        self._space_timer.stop()
        asked = self.models_dir.text().strip()
        call = self._bridge.settings.disk_space(asked)
        self._space_call = call
        self._ops.run(
            call,
            lambda disk: self._on_space(call, disk),
            on_failure=lambda failure: self._on_space_failed(call, failure),
        )

    def space_text(self) -> str:
        return self.space.text()

    def _on_space(self, call: Call, disk: DiskInfo) -> None:
        if call is not self._space_call:
            return  # the folder changed since: a later answer is coming
        self.disk = disk
        where = "" if self.models_dir.text().strip() else f" (the Hugging Face cache: {disk.path})"
        self.space.setText(space_words(disk) + where)

    def _on_space_failed(self, call: Call, failure: Failure) -> None:
        if call is not self._space_call:
            return
        self.disk = None
        self.space.setText(f"Free space unknown: {failure.detail}")

    def _on_models_dir_changed(self, *_: Any) -> None:
        self._space_timer.start()
        self.changed.emit()

    def _on_changed(self, *_: Any) -> None:
        self.changed.emit()

    def _on_dialog_finished(self) -> None:
        if self.dialog is not None:
            self.dialog.deleteLater()
            self.dialog = None
