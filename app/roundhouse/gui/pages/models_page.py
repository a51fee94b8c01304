"""The Models page: search Hugging Face with fit badges, pick files, follow the downloads, and
the local library. Thin wiring: each part is a widget of its own (widgets/models_*.py)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.downloads import DownloadQueueView
from roundhouse.api.hub import HubModelSummary, HubTokenStatus
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.dialogs.hub_token_dialog import HubTokenDialog
from roundhouse.gui.widgets.models_details import ModelDetailsView
from roundhouse.gui.widgets.models_downloads import DownloadsPanel
from roundhouse.gui.widgets.models_fit import FitCache
from roundhouse.gui.widgets.models_library import LibraryView
from roundhouse.gui.widgets.models_search import ModelSearchView

SEARCH_TAB, DOWNLOADS_TAB, LIBRARY_TAB = 0, 1, 2


def token_in_words(status: HubTokenStatus) -> str:
    if not status.present:
        return "No Hugging Face token (gated models need one)"
    who = f" as {status.user}" if status.user else ""
    if status.valid is False:
        return "The Hugging Face token was refused: set a new one"
    return f"Hugging Face token set{who}"


class ModelsPage(QWidget):
    """Searches once first shown; the downloads are followed while connected."""

    title = "Models"
    chat_requested = Signal(str)  # the Library's Chat: the model to open the Chat page on

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self._looked = False
        self.calls = ModelsCalls(bridge)
        self.fits = FitCache(self.calls, self)
        self.token_status: HubTokenStatus | None = None
        self.token_dialog: HubTokenDialog | None = None

        heading = QLabel(self.title)
        heading.setObjectName("pageTitle")
        self.token_label = QLabel("Waiting for the daemon…")
        self.token_label.setObjectName("hint")
        self.token_button = QPushButton("Hugging Face token…")
        self.token_button.clicked.connect(self.open_token_dialog)
        header = QHBoxLayout()
        header.addWidget(heading)
        header.addSpacing(16)
        header.addWidget(self.token_label, 1)
        header.addWidget(self.token_button)

        self.search = ModelSearchView(self.calls, self.fits)
        self.details = ModelDetailsView(self.calls, self.fits)
        self.downloads = DownloadsPanel(bridge, self.calls)
        self.library = LibraryView(bridge, self.calls, self.fits)
        self.library.chat_requested.connect(self.chat_requested)
        # Results above, the chosen model below: both want the window's width.
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self.search)
        splitter.addWidget(self.details)
        splitter.setSizes([300, 340])
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(splitter, "Search")
        self.tabs.addTab(self.downloads, "Downloads")
        self.tabs.addTab(self.library, "Library")

        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.tabs, 1)

        self.search.model_selected.connect(self._on_search_model_selected)
        # The ways to add models, offered where there are none: each leads to where it is done.
        self.search.import_requested.connect(self._import_instead)
        self.search.folder_requested.connect(self._add_folder_instead)
        self.library.empty_hint.search_requested.connect(self._search_instead)
        self.details.token_requested.connect(self.open_token_dialog)
        self.details.download_queued.connect(self._on_details_download_queued)
        self.downloads.counts_changed.connect(self._on_downloads_counts_changed)
        self.downloads.item_finished.connect(lambda _: self.library.mark_stale())
        self.tabs.currentChanged.connect(self._on_tabs_changed)
        bridge.when_connected(self._on_bridge_connected)
        bridge.state_changed.connect(self._on_bridge_state_changed)
        self._on_bridge_state_changed(bridge.state.value)

    def show_tab(self, index: int) -> None:
        self.tabs.setCurrentIndex(index)

    def open_token_dialog(self) -> HubTokenDialog:
        if self.token_dialog is not None:
            self.token_dialog.raise_()
            return self.token_dialog
        dialog = HubTokenDialog(self.calls, self.token_status, self.window())
        dialog.token_changed.connect(self._on_token_changed)
        dialog.finished.connect(self._on_token_dialog_finished)
        self.token_dialog = dialog
        # open(), not exec(): a nested event loop would stall qasync's tasks.
        dialog.open()
        return dialog

    # -- reacting -----------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._first_look()
        self._on_tabs_changed(self.tabs.currentIndex())

    def _first_look(self) -> None:
        """Nothing is asked before the page is first shown: most sessions never open it."""
        connected = self._bridge.state == ConnectionState.CONNECTED
        if not self._looked and self.isVisible() and connected:
            self._looked = True
            self.search.search()
            self._read_token_status()
            self.downloads.follow()

    def _on_bridge_connected(self) -> None:
        # Another daemon, or the same one restarted: its hardware may differ.
        self.fits.clear()
        if self._looked:
            self._read_token_status()
        self._first_look()
        if self.isVisible():
            self._on_tabs_changed(self.tabs.currentIndex())

    def _on_bridge_state_changed(self, value: str) -> None:
        connected = ConnectionState(value) == ConnectionState.CONNECTED
        self.search.set_connected(connected)
        self.token_button.setEnabled(connected)
        # The token's state is read when the page is first shown (and on each reconnect).
        self.token_label.setText("" if connected else "Not connected to the daemon.")

    def _on_tabs_changed(self, index: int) -> None:
        if index == LIBRARY_TAB:
            self.library.refresh_if_stale()
            self.library.request_visible_fits()
        elif index == SEARCH_TAB:
            self.search.request_visible_fits()

    def _import_instead(self) -> None:
        self.show_tab(LIBRARY_TAB)
        self.library.choose_import()

    def _add_folder_instead(self) -> None:
        self.show_tab(LIBRARY_TAB)
        self.library.empty_hint.choose_folder()

    def _search_instead(self) -> None:
        self.show_tab(SEARCH_TAB)
        self.search.query_edit.setFocus()

    def _on_search_model_selected(self, model: HubModelSummary) -> None:
        self.details.show_model(model.id)

    def _on_details_download_queued(self, view: DownloadQueueView) -> None:
        self.downloads.show_queue(view)

    def _on_downloads_counts_changed(self, unfinished: int) -> None:
        title = f"Downloads ({unfinished})" if unfinished else "Downloads"
        self.tabs.setTabText(DOWNLOADS_TAB, title)

    def _read_token_status(self) -> None:
        call = self.calls.token_status()
        self._ops.run(
            call,
            self._show_token_status,
            on_failure=lambda failure: self.token_label.setText(f"Token unknown: {failure}"),
        )

    def _show_token_status(self, status: HubTokenStatus) -> None:
        self.token_status = status
        self.token_label.setText(token_in_words(status))
        self.token_label.setToolTip(status.message)

    def _on_token_changed(self, status: HubTokenStatus) -> None:
        self._show_token_status(status)
        # A token opens gated repositories: their pages and estimates read again.
        self.fits.clear()
        self.details.reload()
        self.search.request_visible_fits()

    def _on_token_dialog_finished(self) -> None:
        dialog, self.token_dialog = self.token_dialog, None
        if dialog is not None:
            dialog.deleteLater()
