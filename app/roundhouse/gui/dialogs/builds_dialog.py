"""llama.cpp's builds: which are installed and which one engines start with; use, remove, add."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.engines import EngineId
from roundhouse.api.installs import (
    Backend,
    BuildList,
    InstalledBuild,
    InstallJob,
    InstallRequest,
    JobState,
)
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.widgets.confirm import ask_to_confirm
from roundhouse.gui.widgets.install_view import InstallView
from roundhouse.gui.widgets.table_view import cell_text

HEADERS = ("Build", "Backend", "File", "Installed", "")
CURRENT_MARK = "✓ current"
NO_BUILDS = "Roundhouse installed no llama.cpp build yet: Install another… adds one."
AUTOMATIC = "automatic (best for this machine)"
# The GPU APIs one may ask for; "other" builds are never chosen on their own.
BACKENDS = [b for b in Backend if b != Backend.OTHER]


def installed_in_words(build: InstalledBuild) -> str:
    if build.installed_at is None:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(build.installed_at))


class BuildsDialog(QDialog):
    """Use makes a build current; Remove asks first for the current one (then forces it)."""

    changed = Signal()  # a build was added, switched to or removed

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        # Its calls answer this dialog only while it lives; one switch or removal at a time.
        self._ops = Ops(self, on_busy=self._update_actions)
        self.builds: BuildList | None = None
        self.confirm_box: QMessageBox | None = None
        self.setWindowTitle("llama.cpp builds")
        self.resize(760, 520)

        self.table = QTableWidget(0, len(HEADERS))
        self.table.setHorizontalHeaderLabels(list(HEADERS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setHighlightSections(False)
        for column in range(len(HEADERS)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._update_actions)
        self.table.doubleClicked.connect(lambda _: self.use_selected())

        self.use_button = QPushButton("Use")
        self.use_button.setToolTip("Start llama.cpp instances with this build from now on")
        self.use_button.clicked.connect(self.use_selected)
        self.remove_button = QPushButton("Remove")
        self.remove_button.setToolTip("Delete this build's folder")
        self.remove_button.clicked.connect(self.remove_selected)
        self.another_button = QPushButton("Install another…")
        self.another_button.setCheckable(True)
        self.another_button.toggled.connect(self._on_another_button_toggled)
        actions = QHBoxLayout()
        for button in (self.use_button, self.remove_button):
            actions.addWidget(button)
        actions.addStretch(1)
        actions.addWidget(self.another_button)

        self.partials = QLabel()
        self.partials.setWordWrap(True)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.tag_edit = QLineEdit()
        self.tag_edit.setPlaceholderText("latest release, or a tag such as b6000")
        self.backend_combo = QComboBox()
        self.backend_combo.addItem(AUTOMATIC, None)
        for backend in BACKENDS:
            self.backend_combo.addItem(backend.value, backend)
        self.backend_combo.setToolTip(
            "Roundhouse picks the build for this machine's GPU; choose one to override it"
        )
        self.install_button = QPushButton("Install")
        self.install_button.clicked.connect(self.install_another)
        self.install_view = InstallView(bridge, EngineId.LLAMA_CPP)
        self.install_view.ended.connect(self._on_install_view_ended)
        self.another = QGroupBox("Install another build")
        form = QFormLayout(self.another)
        form.addRow("Release tag:", self.tag_edit)
        form.addRow("Backend:", self.backend_combo)
        form.addRow("", self.install_button)
        form.addRow(self.install_view)
        self.another.hide()

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addLayout(actions)
        layout.addWidget(self.partials)
        layout.addWidget(self.message)
        layout.addWidget(self.another)
        layout.addWidget(buttons)
        self._update_actions()
        self.refresh()

    # -- what tests and the page use ----------------------------------------------------

    def tags(self) -> list[str]:
        return [build.tag for build in self.builds.builds] if self.builds else []

    def row_texts(self) -> list[list[str]]:
        return [
            [cell_text(self.table, row, column) for column in range(len(HEADERS))]
            for row in range(self.table.rowCount())
        ]

    def select_tag(self, tag: str) -> bool:
        if tag not in self.tags():
            return False
        self.table.selectRow(self.tags().index(tag))
        return True

    def selected(self) -> InstalledBuild | None:
        rows = self.table.selectionModel().selectedRows()
        if not rows or self.builds is None:
            return None
        return self.builds.builds[rows[0].row()]

    # -- actions ------------------------------------------------------------------------

    def refresh(self) -> None:
        self._ops.run(
            self._bridge.installs.builds(),
            self.show_builds,
            on_failure=lambda failure: self._say(f"The builds were not listed: {failure}"),
        )

    def use_selected(self) -> None:
        build = self.selected()
        if build is None or build.current or self._ops.busy:
            return
        self._say(f"Switching to {build.tag}…")
        self._ops.run(
            self._bridge.installs.use_build(build.tag),
            lambda _: self._done(f"llama.cpp now starts with {build.tag}."),
            on_failure=lambda failure: self._say(f"Not switched: {failure}", error=True),
            busy=True,
        )

    def remove_selected(self) -> None:
        build = self.selected()
        if build is None or self._ops.busy:
            return
        if build.current:
            self._confirm_remove_current(build)
        else:
            self._remove(build, force=False)

    def install_another(self) -> None:
        backend = self.backend_combo.currentData()
        request = InstallRequest(tag=self.tag_edit.text().strip() or None, backend=backend)
        self.install_view.install(request)
        self._update_actions()

    # -- how they go --------------------------------------------------------------------

    def show_builds(self, builds: BuildList) -> None:
        selected = self.selected()
        self.builds = builds
        self.table.setRowCount(len(builds.builds))
        for row, build in enumerate(builds.builds):
            texts = (
                build.tag,
                build.backend.value if build.backend else "—",
                build.asset or build.path,
                installed_in_words(build),
                CURRENT_MARK if build.current else "",
            )
            for column, text in enumerate(texts):
                item = QTableWidgetItem(text)
                item.setToolTip(build.reason or build.path if column < 3 else text)
                self.table.setItem(row, column, item)
        if selected is not None:
            self.select_tag(selected.tag)
        if not builds.builds:
            self._say(NO_BUILDS)
        elif self.message.text() == NO_BUILDS:
            self._say("")
        if builds.partials:
            self.partials.setText(
                "Downloads that resume at their next install: " + ", ".join(builds.partials)
            )
        self.partials.setVisible(bool(builds.partials))
        self._update_actions()

    def _confirm_remove_current(self, build: InstalledBuild) -> None:
        others = [tag for tag in self.tags() if tag != build.tag]
        self.confirm_box = ask_to_confirm(
            self,
            title="Remove the current build",
            text=f"Remove {build.tag}, the build llama.cpp starts with?",
            detail=(
                "Choose another with Use first to keep llama.cpp ready."
                if others
                else "No other build is installed: llama.cpp is then started from PATH, if found."
            ),
            action="Remove",
            on_confirm=lambda: self._remove(build, force=True),
            on_closed=self._forget_confirm_box,
        )

    def _forget_confirm_box(self) -> None:
        self.confirm_box = None

    def _remove(self, build: InstalledBuild, *, force: bool) -> None:
        self._say(f"Removing {build.tag}…")

        def removed(builds: BuildList) -> None:
            self.show_builds(builds)
            self._done(f"Removed {build.tag}.")

        self._ops.run(
            self._bridge.installs.remove_build(build.tag, force=force),
            removed,
            on_failure=lambda failure: self._say(f"Not removed: {failure}", error=True),
            busy=True,
        )

    def _done(self, text: str) -> None:
        self._say(text)
        self.changed.emit()
        self.refresh()

    def _say(self, text: str, *, error: bool = False) -> None:
        self.message.setObjectName("dialogError" if error else "")
        # The stylesheet matches by object name: polish again for the new one.
        self.message.style().unpolish(self.message)
        self.message.style().polish(self.message)
        self.message.setText(text)

    def _update_actions(self) -> None:
        build = self.selected()
        idle = not self._ops.busy
        self.use_button.setEnabled(idle and build is not None and not build.current)
        self.remove_button.setEnabled(idle and build is not None)
        self.install_button.setEnabled(not self.install_view.running)

    def _on_another_button_toggled(self, checked: bool) -> None:
        self.another.setVisible(checked)

    def _on_install_view_ended(self, job: InstallJob | None) -> None:
        if job is not None and job.state == JobState.DONE:
            self.changed.emit()
            self.refresh()
        self._update_actions()

    def error_text(self) -> str:
        return self.message.text() if self.message.objectName() == "dialogError" else ""
