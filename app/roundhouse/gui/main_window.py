"""The main window: thin wiring of navigation, pages, the banner and the status bar."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QSettings, QSize, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from roundhouse.gui.connection_state import ConnectionState

if TYPE_CHECKING:
    # Only for types: the window paints before the client and its HTTP stack are imported.
    from roundhouse.gui.daemon_bridge import DaemonBridge
    from roundhouse.gui.widgets.banner import Banner

GEOMETRY_KEY = "main_window/geometry"
# Each page's icon in the sidebar (Lucide's names, resources/icons/ui).
PAGE_ICONS = {
    "Hardware": "cpu",
    "Engines": "server-cog",
    "Models": "boxes",
    "Ollama": "package",
    "Chat": "message-square",
    "Benchmark": "gauge",
    "Monitor": "activity",
    "Machines": "network",
    "Settings": "settings",
}
NAV_ICON_PX = 20


class CurrentPageStack(QStackedWidget):
    """A page stack sized by the page on screen only.

    QStackedWidget asks every page for its size hints, hidden ones too, whenever anything
    inside changes size: a live label on the Hardware page re-measured the Engines, Ollama
    and Settings pages each second (+0.5 % of a core idle). Hidden pages do not need room.
    """

    def sizeHint(self) -> QSize:
        current = self.currentWidget()
        return current.sizeHint() if current is not None else super().sizeHint()

    def minimumSizeHint(self) -> QSize:
        current = self.currentWidget()
        return current.minimumSizeHint() if current is not None else super().minimumSizeHint()


class MainWindow(QMainWindow):
    """Only pages that work are listed; closing hides to the tray when there is one."""

    quit_requested = Signal()
    hidden_to_tray = Signal()
    first_run_requested = Signal()

    def __init__(
        self,
        *,
        hides_to_tray: Callable[[], bool] = lambda: False,
        geometry_store: QSettings | None = None,
    ) -> None:
        super().__init__()
        self._bridge: DaemonBridge | None = None
        # Set by the composition root once it knows whether there is a tray.
        self.hides_to_tray = hides_to_tray
        self._geometry_store = geometry_store
        self._theme_followed = False
        self.setWindowTitle("Roundhouse")
        self.navigation = QListWidget()
        self.navigation.setObjectName("navigation")
        self.navigation.setFixedWidth(190)
        self.navigation.setIconSize(QSize(NAV_ICON_PX, NAV_ICON_PX))
        # Tab reaches the sidebar (a list's own focus policy) and the arrow keys move
        # through it, the page following. (No Qt.FocusPolicy here: the first use of the Qt
        # namespace costs ~25 ms before the first paint.)
        self.navigation.setAccessibleName("Pages")
        self.pages = CurrentPageStack()
        # The banner is built in attach(): it has nothing to say before there is a bridge, and
        # its widgets' first use costs start-up time before the first paint.
        self.banner: Banner | None = None
        self._right = right = QVBoxLayout()
        right.setContentsMargins(0, 0, 0, 0)
        right.addWidget(self.pages, 1)
        central = QWidget()
        layout = QHBoxLayout(central)
        # The sidebar runs edge to edge; the pages keep their own margins.
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.navigation)
        layout.addLayout(right, 1)
        self.setCentralWidget(central)
        # Pages not shown yet: their builders, by stack index (see add_page).
        self._builders: dict[int, Callable[[], QWidget]] = {}
        self.navigation.currentRowChanged.connect(self._show_row)
        self._restore_geometry()

    def attach(self, bridge: DaemonBridge) -> None:
        """Follow the bridge: done after the first paint, once the client is imported."""
        from roundhouse.gui.widgets.banner import Banner
        from roundhouse.gui.widgets.settings_updates import UpdateNotice

        self._bridge = bridge
        # Built after the first paint too: the first use of a Qt enum such as StandardKey
        # makes PySide6 build its Python enums (~30 ms).
        quit_action = QAction("Quit Roundhouse", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.quit_requested)
        self.addAction(quit_action)
        self.help_menu = self.menuBar().addMenu("&Help")
        guide = self.help_menu.addAction("First-run guide…")
        guide.setToolTip("The engine, a starter model that fits this machine, and a first chat")
        guide.triggered.connect(self.first_run_requested)
        self.connection_label = QLabel("Looking for the daemon…")
        self.statusBar().addWidget(self.connection_label, 1)
        # Shown only while the daemon knows of a newer release (the Settings page's Updates).
        self.update_notice = UpdateNotice(bridge)
        self.statusBar().addPermanentWidget(self.update_notice)
        self.banner = Banner()
        self._right.insertWidget(0, self.banner)
        self.banner.retry_clicked.connect(bridge.retry)
        self.banner.start_clicked.connect(bridge.start_daemon)
        bridge.state_changed.connect(self._on_bridge_state_changed)
        bridge.disconnected.connect(self._on_bridge_disconnected)
        self._on_bridge_state_changed(bridge.state.value)

    def add_page(self, page: QWidget | Callable[[], QWidget], title: str) -> None:
        """A page, or a function that builds it the first time it is shown.

        Built on first use: each page costs 2-5 MB of widgets and models, and most sessions
        open two or three of the nine (ADR 42)."""
        if isinstance(page, QWidget):
            self.pages.addWidget(page)
        else:
            self._builders[self.pages.addWidget(QWidget())] = page
        item = QListWidgetItem(title, self.navigation)
        row = self.navigation.count()
        if row <= 9:
            # Ctrl+1 … Ctrl+9 open the pages in the sidebar's order.
            item.setToolTip(f"{title} ({QKeySequence(f'Ctrl+{row}').toString()})")
            jump = QAction(self)
            jump.setShortcut(QKeySequence(f"Ctrl+{row}"))
            jump.triggered.connect(lambda _=False, r=row - 1: self.navigation.setCurrentRow(r))
            self.addAction(jump)
        self._set_page_icon(item)
        if self._theme_followed is False:
            self._follow_theme()
        if self.navigation.currentRow() < 0:
            self.navigation.setCurrentRow(0)

    def _follow_theme(self) -> None:
        from roundhouse.gui.theme.manager import theme_manager

        app = QApplication.instance()
        if isinstance(app, QApplication):
            theme_manager(app).changed.connect(self._on_theme_changed)
            self._theme_followed = True

    def _set_page_icon(self, item: QListWidgetItem) -> None:
        from roundhouse.gui.icons import ui_icon
        from roundhouse.gui.theme.manager import current_scheme

        name = PAGE_ICONS.get(item.text())
        if name is not None:
            item.setIcon(ui_icon(name, current_scheme()))

    def _on_theme_changed(self, _scheme: str) -> None:
        # The icons are drawn in the scheme's text colour: draw them again.
        for row in range(self.navigation.count()):
            item = self.navigation.item(row)
            if item is not None:
                self._set_page_icon(item)

    def _show_row(self, row: int) -> None:
        self._page_at(row)
        self.pages.setCurrentIndex(row)

    def _page_at(self, row: int) -> QWidget | None:
        """The page in that row, built now if it was not yet."""
        build = self._builders.pop(row, None)
        if build is not None:
            placeholder = self.pages.widget(row)
            self.pages.insertWidget(row, build())
            if placeholder is not None:
                self.pages.removeWidget(placeholder)
                placeholder.deleteLater()
        return self.pages.widget(row)

    def page(self, title: str) -> QWidget:
        """The page of that title (built if it was not yet), without showing it."""
        for row in range(self.navigation.count()):
            item = self.navigation.item(row)
            if item is not None and item.text() == title:
                page = self._page_at(row)
                if page is not None:
                    return page
        raise KeyError(title)

    def show_page(self, title: str) -> QWidget:
        page = self.page(title)
        self.navigation.setCurrentRow(self.pages.indexOf(page))
        return page

    def show_chat(self, conversation_id: str | None = None, *, model: str | None = None) -> None:
        """Bring the window up on the Chat page, with that conversation open (if one), or a
        new chat with `model` picked (the Library's Chat button)."""
        from roundhouse.gui.pages.chat_page import ChatPage

        page = self.show_page(ChatPage.title)
        assert isinstance(page, ChatPage)
        if conversation_id is not None:
            page.open_conversation(conversation_id)
        elif model is not None and not page.busy:
            page.new_chat()
            # Picked as the user picks it in the page's model box, so the page (and what
            # follows a pick there) sees the same choice.
            page.picker.set_model(model)
            page.picker.picked.emit(model)
        self.bring_to_front()

    def bring_to_front(self) -> None:
        self.show()
        self.raise_()
        self.activateWindow()

    def _on_bridge_state_changed(self, value: str) -> None:
        assert self.banner is not None, "the banner exists once a bridge is attached"
        state = ConnectionState(value)
        if state == ConnectionState.CONNECTED:
            self.banner.hide()
            status = self._bridge.status if self._bridge else None
            where = f" at {status.url}, version {status.version}" if status else ""
            self.connection_label.setText(f"Connected to the Roundhouse daemon{where}")
        elif state == ConnectionState.STARTING:
            self.banner.show_busy("Starting the Roundhouse daemon in the background…")
            self.connection_label.setText("Starting the daemon…")
        elif state == ConnectionState.CONNECTING:
            if not self.banner.isHidden():
                self.banner.show_busy("Looking for the Roundhouse daemon…")
            self.connection_label.setText("Looking for the daemon…")
        else:
            self.connection_label.setText("Not connected to the daemon")

    def _on_bridge_disconnected(self, message: str) -> None:
        assert self.banner is not None, "the banner exists once a bridge is attached"
        self.banner.show_problem(message)

    def closeEvent(self, event: QCloseEvent) -> None:
        self._save_geometry()
        if self.hides_to_tray():
            # The app lives on in the tray; the daemon serves on either way.
            event.ignore()
            self.hide()
            self.hidden_to_tray.emit()
            return
        event.accept()

    def _restore_geometry(self) -> None:
        saved = self._geometry_store.value(GEOMETRY_KEY) if self._geometry_store else None
        if not (isinstance(saved, QByteArray) and self.restoreGeometry(saved)):
            self.resize(1200, 760)

    def _save_geometry(self) -> None:
        if self._geometry_store is not None:
            self._geometry_store.setValue(GEOMETRY_KEY, self.saveGeometry())
