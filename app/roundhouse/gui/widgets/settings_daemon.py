"""The Daemon section of the Settings page: the control port the app and the CLI reach it on.

Saved with the page; it counts at the daemon's next start (the daemon listens on one port
while it runs). The daemon refuses a port another program holds, naming the program."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFormLayout, QGroupBox, QSpinBox, QVBoxLayout, QWidget

from roundhouse.api.settings import DaemonSettings, Settings
from roundhouse.gui.widgets.settings_path_list import hint, schema_bounds

PORT_HINT = (
    "Where the app and the CLI reach the daemon, on this machine only. A change counts at the "
    "daemon's next start; clients find the new port by themselves. When the port is taken "
    "then, the daemon picks a free one."
)
AT_NEXT_START = "the control port changes when the daemon starts next"


class DaemonSettingsSection(QGroupBox):
    """`apply()` puts the form into settings; `changed` says the form moved."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Daemon", parent)
        self.port = QSpinBox()
        self.port.setRange(*schema_bounds(DaemonSettings, "port"))
        self.port.setSpecialValueText("Any free port")
        self.port.valueChanged.connect(self._on_changed)
        self.serving = hint()
        box = QVBoxLayout()
        box.addWidget(self.port, 0, Qt.AlignmentFlag.AlignLeft)
        box.addWidget(self.serving)
        box.addWidget(hint(PORT_HINT))
        form = QFormLayout(self)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        form.addRow("Control port:", box)

    def show_settings(self, settings: Settings, url: str | None = None) -> None:
        """`url`: where the daemon serves now, which may differ from the saved port."""
        self.port.blockSignals(True)
        self.port.setValue(settings.daemon.port)
        self.port.blockSignals(False)
        self.serving.setText(f"Serving now at {url}." if url else "")
        self.serving.setVisible(bool(url))

    def apply(self, settings: Settings) -> Settings:
        daemon = settings.daemon.model_copy(update={"port": self.port.value()})
        return settings.model_copy(update={"daemon": daemon})

    def _on_changed(self, *_: Any) -> None:
        self.changed.emit()
