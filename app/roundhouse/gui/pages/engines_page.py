"""The Engines page: running instances, and each engine Roundhouse can run, found or why not."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.engines import EngineId, EnginesOverview, EngineSpec, LaunchStyle
from roundhouse.api.installs import InstallJobList, JobState
from roundhouse.api.instances import InstanceInfo
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.dialogs.builds_dialog import BuildsDialog
from roundhouse.gui.dialogs.start_dialog import StartDialog
from roundhouse.gui.icons import set_icon
from roundhouse.gui.widgets.engine_card import EngineCard
from roundhouse.gui.widgets.instances_section import InstancesSection


class EnginesPage(QWidget):
    """Running instances on top; below, one card per runnable catalog engine (attach-only
    entries, a remote server, are left out). The instance list is polled while it shows."""

    title = "Engines"

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self.cards: dict[EngineId, EngineCard] = {}
        self.start_dialog: StartDialog | None = None
        self.builds_dialog: BuildsDialog | None = None
        heading = QLabel(self.title)
        heading.setObjectName("pageTitle")
        self.status_label = QLabel("Waiting for the daemon…")
        self.refresh_button = QPushButton("Refresh")
        set_icon(self.refresh_button, "refresh-cw")
        self.refresh_button.setToolTip("Look for engines again (PATH, usual places, Pythons)")
        self.refresh_button.setEnabled(False)
        self.refresh_button.clicked.connect(self._on_refresh_button_clicked)
        header = QHBoxLayout()
        header.addWidget(heading)
        header.addSpacing(16)
        header.addWidget(self.status_label, 1)
        header.addWidget(self.refresh_button)

        self.instances = InstancesSection(bridge)
        self.instances.start_requested.connect(self._on_instances_start_requested)

        content = QWidget()
        self._cards_layout = QVBoxLayout(content)
        self._cards_layout.setContentsMargins(0, 0, 8, 0)
        self._cards_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(content)
        cards_title = QLabel("Engines on this machine")
        cards_title.setObjectName("sectionTitle")
        cards = QWidget()
        cards_layout = QVBoxLayout(cards)
        cards_layout.setContentsMargins(0, 6, 0, 0)
        cards_layout.addWidget(cards_title)
        cards_layout.addWidget(scroll, 1)

        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self.instances)
        splitter.addWidget(cards)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        # A few rows for the instances, the rest for the engines; the user may drag it.
        splitter.setSizes([260, 540])

        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(splitter, 1)

        bridge.when_connected(self._on_bridge_connected)
        bridge.disconnected.connect(self._on_bridge_disconnected)
        bridge.engines_changed.connect(self._on_bridge_engines_changed)
        bridge.engines_failed.connect(self._on_bridge_engines_failed)
        if bridge.engines is not None:
            self._on_bridge_engines_changed(bridge.engines)

    def card(self, engine: EngineId) -> EngineCard:
        return self.cards[engine]

    def installed_engines(self) -> list[EngineSpec]:
        """Engines the daemon found and can start, in the catalog's order."""
        overview = self._bridge.engines
        if overview is None:
            return []
        found = {hit.id for hit in overview.detection.found}
        return [
            spec
            for spec in overview.catalog.engines
            if spec.launch != LaunchStyle.ATTACH and spec.id in found
        ]

    def open_start_dialog(self, engine: EngineId | None = None) -> StartDialog:
        """One start dialog at a time; asking again brings it to the front."""
        if self.start_dialog is not None:
            self.start_dialog.raise_()
            self.start_dialog.activateWindow()
            return self.start_dialog
        dialog = StartDialog(self._bridge, self.installed_engines(), engine, self.window())
        dialog.started.connect(self._on_start_dialog_started)
        dialog.finished.connect(self._on_start_dialog_finished)
        self.start_dialog = dialog
        # open(), not exec(): a nested event loop would stall qasync's tasks.
        dialog.open()
        return dialog

    def open_builds_dialog(self) -> BuildsDialog:
        """One builds dialog at a time; asking again brings it to the front."""
        if self.builds_dialog is not None:
            self.builds_dialog.raise_()
            self.builds_dialog.activateWindow()
            return self.builds_dialog
        dialog = BuildsDialog(self._bridge, self.window())
        dialog.finished.connect(self._on_builds_dialog_finished)
        self.builds_dialog = dialog
        dialog.open()
        return dialog

    def show_overview(self, overview: EnginesOverview) -> None:
        """Cards follow the catalog's order; each shows what detection says of its engine."""
        runnable = [s for s in overview.catalog.engines if s.launch != LaunchStyle.ATTACH]
        for engine in [e for e in self.cards if e not in {s.id for s in runnable}]:
            self.cards.pop(engine).deleteLater()
        for index, spec in enumerate(runnable):
            card = self.cards.get(spec.id)
            if card is None or card.spec != spec:
                if card is not None:
                    card.deleteLater()
                card = self.cards[spec.id] = EngineCard(spec, self._bridge)
                card.start_requested.connect(self.open_start_dialog)
                card.builds_requested.connect(self.open_builds_dialog)
            # Insert (or move) at its place in the catalog, above the final stretch.
            self._cards_layout.insertWidget(index, card)
            hits = [hit for hit in overview.detection.found if hit.id == spec.id]
            missing = next((m for m in overview.detection.missing if m.id == spec.id), None)
            if hits:
                card.show_found(hits)
            elif missing is not None:
                card.show_missing(missing)
            else:
                card.show_unknown()

    def _on_instances_start_requested(self) -> None:
        self.open_start_dialog()

    def _on_start_dialog_started(self, info: InstanceInfo) -> None:
        self.instances.select_instance(info.id)

    def _on_start_dialog_finished(self) -> None:
        dialog, self.start_dialog = self.start_dialog, None
        if dialog is not None:
            dialog.deleteLater()

    def _on_builds_dialog_finished(self) -> None:
        dialog, self.builds_dialog = self.builds_dialog, None
        if dialog is not None:
            dialog.deleteLater()

    def _follow_running_installs(self, jobs: InstallJobList) -> None:
        """Installs already under way (from the CLI, or before the app started) show too."""
        for job in jobs.jobs:
            card = self.cards.get(job.engine)
            running = job.state == JobState.RUNNING
            if running and card is not None and not card.install_view.running:
                card.install_view.attach(job)

    def _on_refresh_button_clicked(self) -> None:
        self.refresh_button.setEnabled(False)
        self.status_label.setText("Looking for engines again…")
        self._bridge.refresh_engines()

    def _on_bridge_connected(self) -> None:
        self.refresh_button.setEnabled(True)

    def _on_bridge_disconnected(self, message: str) -> None:
        self.refresh_button.setEnabled(False)
        if self.cards:
            self.status_label.setText(
                "Showing the last known engines: not connected to the daemon."
            )
        else:
            self.status_label.setText("Not connected to the daemon.")

    def _on_bridge_engines_changed(self, overview: EnginesOverview) -> None:
        first = not self.cards
        self.show_overview(overview)
        if first:
            self._ops.run(self._bridge.installs.jobs(), self._follow_running_installs)
        found_at = time.strftime("%H:%M:%S", time.localtime(overview.detected_at))
        self.status_label.setText(f"Engines found at {found_at}")
        self.refresh_button.setEnabled(self._bridge.state == ConnectionState.CONNECTED)

    def _on_bridge_engines_failed(self, message: str) -> None:
        self.status_label.setText(f"Engines not loaded: {message}")
        self.refresh_button.setEnabled(self._bridge.state == ConnectionState.CONNECTED)
