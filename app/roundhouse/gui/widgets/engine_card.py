"""One catalog engine in a box: found where and which version, or why not, and what it serves;
Install (with live progress), Builds… of llama.cpp, and removing a managed environment."""

from __future__ import annotations

import html
import platform
from pathlib import PurePath

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMenu,
    QMessageBox,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.engines import (
    DetectedEngine,
    EngineId,
    EngineSpec,
    FoundBy,
    InstallerLink,
    MissingEngine,
    ModelFormat,
    Platform,
    SupportLevel,
)
from roundhouse.api.installs import InstallJob, InstallRequest
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.widgets.badge import Badge
from roundhouse.gui.widgets.confirm import ask_to_confirm
from roundhouse.gui.widgets.install_view import InstallView

OS_NAMES = {"Darwin": "macOS", "Linux": "Linux", "Windows": "Windows"}
FORMAT_NAMES = {
    ModelFormat.GGUF: "GGUF",
    ModelFormat.SAFETENSORS: "safetensors",
    ModelFormat.MLX: "MLX",
    ModelFormat.OLLAMA: "Ollama models",
}


def found_in_words(hit: DetectedEngine) -> str:
    """'llama-server 0.5.0-dev on PATH (/usr/local/bin/llama-server)', support when not full."""
    name = PurePath(hit.path).name if hit.path else (hit.module or hit.id.value)
    words = " ".join(part for part in (name, hit.version, hit.where) if part)
    if hit.path and hit.path not in hit.where:
        words += f" ({hit.path})"
    if hit.support == SupportLevel.EXPERIMENTAL:
        words += " (experimental here)"
    return words


def platform_in_words(place: Platform) -> str:
    words = f"{OS_NAMES[place.os]} {place.arch}"
    return words + " (experimental)" if place.support == SupportLevel.EXPERIMENTAL else words


PYTHON_ENGINES = frozenset({EngineId.MLX, EngineId.VLLM, EngineId.SGLANG})


def installer_for(spec: EngineSpec, system: str) -> InstallerLink | None:
    """The engine's own installer for `system` ('Linux', 'Darwin', 'Windows'), if listed."""
    return next((link for link in spec.installers if link.os == system), None)


def installs_itself(spec: EngineSpec) -> bool:
    """Whether Roundhouse installs this engine (a llama.cpp build, or a Python environment)."""
    return spec.id == EngineId.LLAMA_CPP or spec.id in PYTHON_ENGINES


def _label(text: str = "", *, rich: bool = False) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText if rich else Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
    return label


class EngineCard(QGroupBox):
    """Fixed rows (status, formats, platforms, homepage); 'looked in' folds out on demand.

    A found engine offers "Start…", which asks the page to open the start dialog for it. A
    missing one offers "Install" (Roundhouse installs it: progress shows in the card) or its
    own installer's link (Ollama). llama.cpp has "Builds…"; an environment Roundhouse made
    can be removed (it asks first).
    """

    start_requested = Signal(object)  # EngineId
    builds_requested = Signal()

    def __init__(
        self, spec: EngineSpec, bridge: DaemonBridge, parent: QWidget | None = None
    ) -> None:
        super().__init__(spec.title, parent)
        self._ops = Ops(self)
        self.spec = spec
        self._bridge = bridge
        self._hits: list[DetectedEngine] = []
        self._missing: MissingEngine | None = None
        self._remove_call: Call | None = None
        self.confirm_box: QMessageBox | None = None
        self.python_dialog: QFileDialog | None = None
        self.start_button = QPushButton("Start…")
        self.start_button.setToolTip(f"Start {spec.title} with a model")
        self.start_button.clicked.connect(lambda: self.start_requested.emit(self.spec.id))
        self.install_button = QToolButton()
        self.install_button.setText("Install")
        self.install_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.install_button.clicked.connect(lambda: self.install())
        if spec.id in PYTHON_ENGINES:
            self.install_button.setToolTip(
                f"Make a Python environment for {spec.title} and install it there with pip"
            )
            menu = QMenu(self.install_button)
            menu.addAction("Install in a new environment", lambda: self.install())
            menu.addAction("Install with a Python of your choice…", self.choose_python)
            self.install_button.setMenu(menu)
            self.install_button.setPopupMode(QToolButton.ToolButtonPopupMode.MenuButtonPopup)
        else:
            self.install_button.setToolTip(
                f"Download the official {spec.title} build for this machine"
            )
        self.get_button = QPushButton(f"Get {spec.title}")
        self.get_button.clicked.connect(self.open_installer)
        self.builds_button = QPushButton("Builds…")
        self.builds_button.setToolTip("The llama.cpp builds Roundhouse installed: use, remove, add")
        self.builds_button.clicked.connect(self.builds_requested)
        self.remove_env_button = QPushButton("Remove environment")
        self.remove_env_button.setToolTip(
            f"Delete the Python environment Roundhouse made for {spec.title}"
        )
        self.remove_env_button.clicked.connect(self.remove_environment)
        for button in (self.install_button, self.get_button, self.builds_button):
            button.hide()
        self.remove_env_button.hide()
        self.start_button.hide()

        status_row = QWidget()
        status_layout = QHBoxLayout(status_row)
        status_layout.setContentsMargins(0, 0, 0, 0)
        buttons = QVBoxLayout()
        buttons.setSpacing(4)
        for button in (
            self.start_button,
            self.install_button,
            self.get_button,
            self.builds_button,
            self.remove_env_button,
        ):
            buttons.addWidget(button)
            button.setMinimumWidth(110)
        buttons.addStretch(1)
        self.status = _label(rich=True)
        self.hint = _label()
        self.note = _label()
        self.note.setObjectName("cardNote")
        self.install_view = InstallView(bridge, spec.id)
        self.install_view.ended.connect(self._on_install_view_ended)
        self.build = _label()
        self.notes = _label()
        self.formats = _label(", ".join(FORMAT_NAMES.get(f, f.value) for f in spec.formats))
        self.platforms = _label(", ".join(platform_in_words(p) for p in spec.platforms))
        link = html.escape(spec.homepage, quote=True)
        homepage = _label(f'<a href="{link}">{html.escape(spec.homepage)}</a>', rich=True)
        homepage.setOpenExternalLinks(True)
        self.looked_in_button = QToolButton()
        self.looked_in_button.setCheckable(True)
        self.looked_in_button.setAutoRaise(True)
        self.looked_in_button.setStyleSheet("QToolButton { border: none; }")
        self.looked_in_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.looked_in_button.toggled.connect(self._on_looked_in_button_toggled)
        self.looked_in = _label()
        self.looked_in.setIndent(18)
        self.looked_in.hide()

        self._form = QFormLayout(self)
        self._form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        # A label beside a wrapped value lines up with its first line, not its middle.
        self._form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        # The state at a glance, in words and colour: installed, not found, not known yet.
        self.badge = Badge("unknown", "Checking")
        status_layout.addWidget(self.badge, 0, Qt.AlignmentFlag.AlignTop)
        status_layout.addWidget(self.status, 1, Qt.AlignmentFlag.AlignTop)
        status_layout.addLayout(buttons)
        self._form.addRow("Status:", status_row)
        self._form.addRow("Get it:", self.hint)
        self._form.addRow(self.install_view)
        self._form.addRow(self.note)
        self._form.addRow("Build:", self.build)
        self._form.addRow("Notes:", self.notes)
        self._form.addRow("Formats:", self.formats)
        self._form.addRow("Platforms:", self.platforms)
        self._form.addRow("Homepage:", homepage)
        self._form.addRow(self.looked_in_button)
        self._form.addRow(self.looked_in)
        self._form.setRowVisible(self.note, False)
        self._status_text = ""
        bridge.state_changed.connect(self._on_bridge_state_changed)
        self.show_unknown()

    def show_unknown(self) -> None:
        self._hits, self._missing = [], None
        self._show("Waiting for the daemon…", None, [], [])

    def show_found(self, hits: list[DetectedEngine]) -> None:
        """Every copy found, best first (the one Roundhouse would use)."""
        self._hits, self._missing = list(hits), None
        lines = [f"Found: {found_in_words(hit)}" for hit in hits]
        notes = [note for hit in hits for note in hit.notes]
        self._show("\n".join(lines), hits[0].build_info if hits else None, notes, [])

    def show_missing(self, missing: MissingEngine) -> None:
        self._hits, self._missing = [], missing
        self._show(f"Not found: {missing.why}", None, [], missing.looked_in)

    # -- actions ------------------------------------------------------------------------

    def install(self, python: str | None = None) -> None:
        """Install the engine on the daemon's machine; the card shows how it goes."""
        self._show_note("")
        self.install_view.install(InstallRequest(python=python or None))
        self._update_actions()

    def choose_python(self) -> None:
        """Pick the Python the environment is made from (a file on this machine)."""
        dialog = QFileDialog(self.window(), f"The Python to install {self.spec.title} with")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(self.install)
        dialog.finished.connect(self._on_python_dialog_finished)
        self.python_dialog = dialog
        # open(), not exec(): a nested event loop would stall qasync's tasks.
        dialog.open()

    def installer_link(self) -> InstallerLink | None:
        """The engine's own installer for the daemon's OS (this one's before it answered)."""
        inventory = self._bridge.inventory
        system = inventory.os if inventory is not None else platform.system()
        return installer_for(self.spec, system)

    def open_installer(self) -> None:
        link = self.installer_link()
        if link is not None:
            QDesktopServices.openUrl(QUrl(link.url))
            self._show_note(f"Opened {link.url}: once installed, press Refresh.")

    def remove_environment(self) -> None:
        """Ask, then delete the environment Roundhouse made for the engine."""
        if self._remove_call is not None:
            return
        self.confirm_box = ask_to_confirm(
            self.window(),
            title="Remove an engine's environment",
            text=f"Remove the Python environment of {self.spec.title}?",
            detail=(
                "Roundhouse deletes the environment it made and everything pip installed in it. "
                "Running instances of the engine must be stopped first. Install it again any time."
            ),
            action="Remove",
            on_confirm=self._remove_environment,
            on_closed=self._forget_confirm_box,
        )

    def _forget_confirm_box(self) -> None:
        self.confirm_box = None

    def _remove_environment(self) -> None:
        self._show_note(f"Removing the environment of {self.spec.title}…")
        self._remove_call = call = self._bridge.installs.remove_venv(self.spec.id)
        self._ops.run(
            call,
            lambda _: self._show_note("Removed the environment."),
            on_failure=self._on_remove_failed,
        )
        call.finished.connect(self._on_remove_finished)
        self._update_actions()

    def _on_remove_failed(self, failure: Failure) -> None:
        self._show_note(f"The environment was not removed: {failure}")

    def _on_remove_finished(self) -> None:
        self._remove_call = None
        self._update_actions()

    def _on_install_view_ended(self, job: InstallJob | None) -> None:
        # What the daemon detected once the install was done comes to the bridge's store
        # (the change feed says the job ended); nothing is asked here.
        self._update_actions()

    def _on_python_dialog_finished(self) -> None:
        if self.python_dialog is not None:
            self.python_dialog.deleteLater()
            self.python_dialog = None

    def _on_bridge_state_changed(self, _value: str) -> None:
        self._update_actions()

    def _show_note(self, text: str) -> None:
        self.note.setText(text)
        self._form.setRowVisible(self.note, bool(text))

    def _update_actions(self) -> None:
        connected = self._bridge.state == ConnectionState.CONNECTED
        installing = self.install_view.running
        missing = self._missing is not None
        managed = any(hit.found_by == FoundBy.MANAGED for hit in self._hits)
        self.start_button.setVisible(bool(self._hits))
        self.install_button.setVisible(missing and installs_itself(self.spec))
        self.install_button.setEnabled(connected and not installing)
        self.get_button.setVisible(missing and self.installer_link() is not None)
        self.builds_button.setVisible(self.spec.id == EngineId.LLAMA_CPP and self._status_known)
        self.builds_button.setEnabled(connected)
        self.remove_env_button.setVisible(managed and self.spec.id in PYTHON_ENGINES)
        self.remove_env_button.setEnabled(
            connected and not installing and self._remove_call is None
        )
        hint = self._missing.install_hint if self._missing is not None else None
        self.hint.setText(hint or "")
        self._form.setRowVisible(self.hint, bool(hint))

    @property
    def _status_known(self) -> bool:
        return bool(self._hits) or self._missing is not None

    def status_text(self) -> str:
        """The status row as plain text, one line per copy found."""
        return self._status_text

    def _show(self, status: str, build: str | None, notes: list[str], looked_in: list[str]) -> None:
        self._status_text = status
        if self._hits:
            self.badge.set("good", "Installed")
        elif self._missing is not None:
            self.badge.set("warn", "Not found")
        else:
            self.badge.set("unknown", "Checking")
        # The first word ("Found:", "Not found:") in bold, the rest as plain text.
        lines = [line.partition(": ") for line in status.splitlines()]
        self.status.setText(
            "<br>".join(
                f"<b>{html.escape(head)}:</b> {html.escape(rest)}" if sep else html.escape(head)
                for head, sep, rest in lines
            )
        )
        self.build.setText(build or "")
        self._form.setRowVisible(self.build, bool(build))
        self.notes.setText("\n".join(notes))
        self._form.setRowVisible(self.notes, bool(notes))
        self.looked_in.setText("\n".join(f"• {place}" for place in looked_in))
        places = "1 place" if len(looked_in) == 1 else f"{len(looked_in)} places"
        self.looked_in_button.setText(f"Looked in {places}")
        self.looked_in_button.setVisible(bool(looked_in))
        self.looked_in_button.setChecked(False)
        self._on_looked_in_button_toggled(False)
        self._update_actions()

    def _on_looked_in_button_toggled(self, checked: bool) -> None:
        arrow = Qt.ArrowType.DownArrow if checked else Qt.ArrowType.RightArrow
        self.looked_in_button.setArrowType(arrow)
        self.looked_in.setVisible(checked and bool(self.looked_in.text()))
