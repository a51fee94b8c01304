"""The Settings page: the daemon's engine settings (Pythons, leftover engines, load timeout)
and the gateway's (its own section widget).

The daemon owns the settings and validates them: the page sends the whole Settings it read,
with the engine part changed, and shows a refusal in words.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.settings import EngineSettings, LeftoverAction, Settings, UiSettings
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.settings_patch import patch_settings
from roundhouse.gui.widgets.desktop_settings import DesktopSettingsSection
from roundhouse.gui.widgets.gateway_settings import GatewaySettingsSection

LEFTOVER_WORDS = {
    LeftoverAction.ADOPT: (
        "Keep them serving",
        "Engines a crashed or killed daemon left running keep serving, listed as adopted: no "
        "model has to load again.",
    ),
    LeftoverAction.REAP: (
        "Stop them",
        "Engines a crashed or killed daemon left running are stopped when the daemon starts: "
        "nothing runs that this daemon did not start.",
    ),
}


def field_bounds(name: str) -> tuple[int, int]:
    """The bounds the schema gives an engine setting: the form follows the schema."""
    field = EngineSettings.model_json_schema()["properties"][name]
    return int(field.get("minimum", 0)), int(field.get("maximum", 1_000_000))


class SettingsPage(QWidget):
    """Save sends the form; Revert shows what the daemon has again."""

    title = "Settings"

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self.settings: Settings | None = None
        self._call: Call | None = None
        self.python_dialog: QFileDialog | None = None
        heading = QLabel(self.title)
        heading.setObjectName("pageTitle")

        self.pythons = QListWidget()
        self.pythons.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.pythons.setMaximumHeight(120)
        self.pythons.itemSelectionChanged.connect(self._update_actions)
        self.python_edit = QLineEdit()
        self.python_edit.setPlaceholderText("/path/to/python (on the daemon's machine)")
        self.python_edit.textChanged.connect(self._update_actions)
        self.python_edit.returnPressed.connect(lambda: self.add_python())
        self.add_button = QPushButton("Add")
        self.add_button.clicked.connect(lambda: self.add_python())
        self.browse_button = QPushButton("Browse…")
        self.browse_button.clicked.connect(self.browse_python)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove_python)
        add_row = QHBoxLayout()
        add_row.addWidget(self.python_edit, 1)
        add_row.addWidget(self.add_button)
        add_row.addWidget(self.browse_button)
        add_row.addWidget(self.remove_button)
        pythons_help = QLabel(
            "Roundhouse looks in these Pythons for mlx-lm, vLLM and SGLang, besides the "
            "environments it makes itself."
        )
        pythons_help.setWordWrap(True)
        pythons_help.setObjectName("hint")

        self.leftover = QComboBox()
        for action, (text, _) in LEFTOVER_WORDS.items():
            self.leftover.addItem(text, action.value)
        self.leftover.currentIndexChanged.connect(self._on_form_changed)
        self.leftover_help = QLabel()
        self.leftover_help.setWordWrap(True)
        self.leftover_help.setObjectName("hint")

        low, high = field_bounds("ready_timeout_s")
        self.ready_timeout = QSpinBox()
        self.ready_timeout.setRange(low, high)
        self.ready_timeout.setSuffix(" s")
        self.ready_timeout.setSingleStep(30)
        self.ready_timeout.valueChanged.connect(self._on_form_changed)
        timeout_help = QLabel(
            "How long an engine may take to load its model before it is given up. Big models "
            "on slow disks need minutes."
        )
        timeout_help.setWordWrap(True)
        timeout_help.setObjectName("hint")

        engines = QGroupBox("Engines")
        form = QFormLayout(engines)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        pythons_box = QVBoxLayout()
        pythons_box.addWidget(self.pythons)
        pythons_box.addLayout(add_row)
        pythons_box.addWidget(pythons_help)
        form.addRow("Pythons:", pythons_box)
        leftover_box = QVBoxLayout()
        leftover_box.addWidget(self.leftover, 0, Qt.AlignmentFlag.AlignLeft)
        leftover_box.addWidget(self.leftover_help)
        form.addRow("Engines left running:", leftover_box)
        timeout_box = QVBoxLayout()
        timeout_box.addWidget(self.ready_timeout, 0, Qt.AlignmentFlag.AlignLeft)
        timeout_box.addWidget(timeout_help)
        form.addRow("Loading may take:", timeout_box)

        self.gateway = GatewaySettingsSection(bridge)
        self.gateway.changed.connect(self._on_form_changed)
        self.desktop = DesktopSettingsSection()
        self.desktop.changed.connect(self._on_form_changed)

        self.save_button = QPushButton("Save")
        self.save_button.clicked.connect(self.save)
        self.revert_button = QPushButton("Revert")
        self.revert_button.setToolTip("Show the settings the daemon has again")
        self.revert_button.clicked.connect(self.reload)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error = QLabel()
        self.error.setObjectName("dialogError")
        self.error.setWordWrap(True)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.hide()
        buttons = QHBoxLayout()
        buttons.addWidget(self.save_button)
        buttons.addWidget(self.revert_button)
        buttons.addWidget(self.message, 1)

        # The sections scroll; the heading, the error and Save stay in view.
        sections = QWidget()
        sections_layout = QVBoxLayout(sections)
        sections_layout.setContentsMargins(0, 0, 0, 0)
        sections_layout.addWidget(engines)
        sections_layout.addWidget(self.gateway)
        sections_layout.addWidget(self.desktop)
        sections_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(sections)
        layout = QVBoxLayout(self)
        layout.addWidget(heading)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.error)
        layout.addLayout(buttons)
        self._on_leftover_changed()
        bridge.connected.connect(self._on_bridge_connected)
        bridge.ui_settings_changed.connect(self._on_bridge_ui_settings_changed)
        bridge.state_changed.connect(lambda _: self._update_actions())
        self._update_actions()

    # -- the form -----------------------------------------------------------------------

    def python_paths(self) -> list[str]:
        return [self.pythons.item(row).text() for row in range(self.pythons.count())]

    def form_engines(self) -> EngineSettings:
        """The engine settings as the form has them, unchecked: the daemon validates them."""
        return EngineSettings.model_construct(
            python_paths=self.python_paths(),
            on_leftover=self.leftover_action(),
            ready_timeout_s=float(self.ready_timeout.value()),
        )

    def leftover_action(self) -> LeftoverAction:
        # Qt hands a StrEnum back as a plain str.
        return LeftoverAction(self.leftover.currentData() or LeftoverAction.ADOPT)

    def changed(self) -> bool:
        if self.settings is None:
            return False
        return (
            self.form_engines() != self.settings.engines
            or self.gateway.form() != self.settings.gateway
            or self.desktop.form(self.settings.ui) != self.settings.ui
        )

    def add_python(self, path: str | None = None) -> None:
        text = (path or self.python_edit.text()).strip()
        if text and text not in self.python_paths():
            self.pythons.addItem(text)
        self.python_edit.clear()
        self._on_form_changed()

    def browse_python(self) -> None:
        dialog = QFileDialog(self.window(), "A Python interpreter")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(self.add_python)
        dialog.finished.connect(self._on_python_dialog_finished)
        self.python_dialog = dialog
        # open(), not exec(): a nested event loop would stall qasync's tasks.
        dialog.open()

    def remove_python(self) -> None:
        for item in self.pythons.selectedItems():
            self.pythons.takeItem(self.pythons.row(item))
        self._on_form_changed()

    def show_settings(self, settings: Settings) -> None:
        self.settings = settings
        engines = settings.engines
        self.pythons.clear()
        self.pythons.addItems(engines.python_paths)
        index = self.leftover.findData(engines.on_leftover.value)
        self.leftover.setCurrentIndex(max(0, index))
        self.ready_timeout.setValue(round(engines.ready_timeout_s))
        self.gateway.show_settings(settings.gateway)
        self.desktop.show_settings(settings.ui)
        self._on_form_changed()

    # -- talking to the daemon ----------------------------------------------------------

    def reload(self) -> None:
        if self._call is not None:
            return
        self._begin("Reading the settings…")
        self._call = call = self._bridge.settings.get()
        call.succeeded.connect(self._on_get_succeeded)
        call.failed.connect(lambda failure: self._fail("The settings were not read", failure))
        call.finished.connect(self._on_call_finished)

    def save(self) -> None:
        if self.settings is None or self._call is not None:
            return
        before = self.settings.engines.python_paths
        engines, gateway = self.form_engines(), self.gateway.form()

        def change(current: Settings) -> Settings:
            # Onto the settings as they are now, not as this page read them: the tray or
            # the quick chat may have changed the active model in between.
            return current.model_copy(
                update={
                    "engines": engines,
                    "gateway": gateway,
                    "ui": self.desktop.form(current.ui),
                }
            )

        self._begin("Saving…")
        self._call = call = patch_settings(self._bridge, "save the settings", change)

        def saved(result: Settings) -> None:
            self.show_settings(result)
            self.message.setText("Saved.")
            if result.engines.python_paths != before:
                # Pythons count at the next detection: look for engines again now.
                self._bridge.refresh_engines()
                self.message.setText("Saved; looking for engines in the Pythons again.")

        call.succeeded.connect(saved)
        call.failed.connect(lambda failure: self._fail("The daemon did not save them", failure))
        call.finished.connect(self._on_call_finished)

    def error_text(self) -> str:
        return self.error.text() if not self.error.isHidden() else ""

    def _on_get_succeeded(self, settings: Settings) -> None:
        self.show_settings(settings)
        self.message.setText("")

    def _begin(self, text: str) -> None:
        self.error.hide()
        self.message.setText(text)
        self._update_actions()

    def _fail(self, what: str, failure: Failure) -> None:
        self.message.setText("")
        self.error.setText(f"{what}: {failure}")
        self.error.show()

    def _on_call_finished(self) -> None:
        self._call = None
        self._update_actions()

    # -- following the form and the daemon ----------------------------------------------

    def _on_form_changed(self, *_: Any) -> None:
        self._on_leftover_changed()
        self._update_actions()

    def _on_leftover_changed(self) -> None:
        self.leftover_help.setText(LEFTOVER_WORDS[self.leftover_action()][1])

    def _update_actions(self) -> None:
        connected = self._bridge.state == ConnectionState.CONNECTED
        idle = connected and self._call is None
        self.save_button.setEnabled(idle and self.changed())
        self.revert_button.setEnabled(idle)
        self.gateway.set_connected(connected)
        self.add_button.setEnabled(bool(self.python_edit.text().strip()))
        self.remove_button.setEnabled(bool(self.pythons.selectedItems()))

    def _on_python_dialog_finished(self) -> None:
        if self.python_dialog is not None:
            self.python_dialog.deleteLater()
            self.python_dialog = None

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self.settings is None or not self.changed():
            self.reload()

    def _on_bridge_ui_settings_changed(self, ui: UiSettings) -> None:
        # The tray flips the desktop switches at once: follow, unless they are being edited.
        if self.settings is None or self.settings.ui == ui:
            return
        editing = self.desktop.form(self.settings.ui) != self.settings.ui
        self.settings = self.settings.model_copy(update={"ui": ui})
        if not editing:
            self.desktop.show_settings(ui)
        self._update_actions()

    def _on_bridge_connected(self) -> None:
        if self.isVisible() and not self.changed():
            self.reload()
