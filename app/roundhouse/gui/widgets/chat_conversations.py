"""The list of conversations, newest first: open one, start a new one, rename, delete; a
search field over it (titles and messages, hits in place of the list while it holds words);
a menu to export the open conversation or import one."""

from __future__ import annotations

import time
from collections.abc import Iterable

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.chat import ConversationSummary, Role, SearchResults

ID_ROLE = Qt.ItemDataRole.UserRole
# A hit's message id (None: the title matched).
MESSAGE_ROLE = Qt.ItemDataRole.UserRole + 1
# Typing is searched once it pauses this long.
SEARCH_AFTER_MS = 250


def _when(t: float, now: float) -> str:
    if now - t < 86_400:
        return time.strftime("%H:%M", time.localtime(t))
    return time.strftime("%d %b %Y", time.localtime(t))


class _FitWidthDelegate(QStyledItemDelegate):
    """Rows as wide as the list, whatever their text: the view then elides what is longer.

    A list lays a row out at its text's width, and a wider row scrolls sideways."""

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        return QSize(0, super().sizeHint(option, index).height())


class ConversationsView(QWidget):
    """Rename edits the title in place; signals carry the conversation's id."""

    opened = Signal(str)
    new_requested = Signal()
    rename_requested = Signal(str, str)  # id, new title
    delete_requested = Signal(str)
    search_requested = Signal(str)  # the words; "" when the field was cleared
    hit_opened = Signal(str, object)  # conversation id, message id or None
    export_requested = Signal(str)  # "md" or "json"
    import_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.new_button = QPushButton("New chat")
        self.new_button.setProperty("primary", True)  # the accent's colours (app.qss)
        self.new_button.clicked.connect(self.new_requested)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search chats")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search the conversations' titles and messages")
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_AFTER_MS)
        self._search_timer.timeout.connect(self._on_search_timer_timeout)
        self.search.textChanged.connect(self._on_search_text_changed)
        self.results = QListWidget()
        self.results.setObjectName("searchResults")
        self.results.setWordWrap(True)
        self.results.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.results.itemActivated.connect(self._on_results_item_activated)
        self.results.itemClicked.connect(self._on_results_item_activated)
        self.results.hide()
        self.results_note = QLabel()
        self.results_note.setObjectName("hint")
        self.results_note.setWordWrap(True)
        self.results_note.hide()
        self.list = QListWidget()
        self.list.setObjectName("conversations")
        self.list.setEditTriggers(QListWidget.EditTrigger.EditKeyPressed)
        # A long title ends in "…" (the whole of it in the tooltip), not in a sideways scroll.
        self.list.setItemDelegate(_FitWidthDelegate(self.list))
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.itemClicked.connect(self._on_list_item_clicked)
        self.list.itemActivated.connect(self._on_list_item_clicked)
        self.list.itemChanged.connect(self._on_list_item_changed)
        self.list.currentItemChanged.connect(lambda *_: self._update_buttons())
        self.rename_button = QPushButton("Rename")
        self.rename_button.clicked.connect(self.rename_current)
        self.delete_button = QPushButton("Delete")
        self.delete_button.clicked.connect(self._on_delete_clicked)
        self.menu = QMenu(self)
        self.export_md_action = QAction("Export as Markdown…", self)
        self.export_md_action.triggered.connect(lambda: self.export_requested.emit("md"))
        self.export_json_action = QAction("Export as JSON…", self)
        self.export_json_action.triggered.connect(lambda: self.export_requested.emit("json"))
        self.import_action = QAction("Import…", self)
        self.import_action.triggered.connect(self.import_requested)
        for action in (self.export_md_action, self.export_json_action, self.import_action):
            self.menu.addAction(action)
        self.more_button = QToolButton()
        self.more_button.setText("More")
        self.more_button.setToolTip("Export the open conversation, or import one")
        self.more_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.more_button.setMenu(self.menu)
        actions = QHBoxLayout()
        actions.addWidget(self.rename_button)
        actions.addWidget(self.delete_button)
        actions.addWidget(self.more_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.new_button)
        layout.addWidget(self.search)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.results, 1)
        layout.addWidget(self.results_note)
        layout.addLayout(actions)
        self._open_id: str | None = None
        self._titles: dict[str, str] = {}
        self._locked = False
        self._update_buttons()

    def set_conversations(self, summaries: Iterable[ConversationSummary]) -> None:
        """Show these (the daemon's order: most recently updated first), keeping the choice."""
        current = self.current_id()
        self.list.blockSignals(True)
        self.list.clear()
        self._titles = {}
        now = time.time()
        for summary in summaries:
            item = QListWidgetItem(summary.title)
            item.setData(ID_ROLE, summary.id)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
            count = summary.message_count
            messages = "1 message" if count == 1 else f"{count} messages"
            item.setToolTip(f"{summary.title}\n{_when(summary.updated_at, now)} · {messages}")
            self._titles[summary.id] = summary.title
            self.list.addItem(item)
        self.list.blockSignals(False)
        self.select(current)

    def ids(self) -> list[str]:
        return [self.list.item(row).data(ID_ROLE) for row in range(self.list.count())]

    def titles(self) -> list[str]:
        return [self.list.item(row).text() for row in range(self.list.count())]

    def current_id(self) -> str | None:
        item = self.list.currentItem()
        return item.data(ID_ROLE) if item is not None and item.isSelected() else None

    def select(self, conversation_id: str | None) -> None:
        """Mark the open conversation (None: none, a new chat not yet sent)."""
        self._open_id = conversation_id
        self.list.blockSignals(True)
        self.list.clearSelection()
        self.list.setCurrentRow(-1)
        for row in range(self.list.count()):
            item = self.list.item(row)
            if item.data(ID_ROLE) == conversation_id:
                self.list.setCurrentItem(item)
                item.setSelected(True)
        self.list.blockSignals(False)
        self._update_buttons()

    def set_title(self, conversation_id: str, title: str) -> None:
        self._titles[conversation_id] = title
        self.list.blockSignals(True)
        for row in range(self.list.count()):
            item = self.list.item(row)
            if item.data(ID_ROLE) == conversation_id:
                item.setText(title)
        self.list.blockSignals(False)

    def rename_current(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.list.editItem(item)

    def set_locked(self, locked: bool) -> None:
        """While a reply streams the open conversation stays open."""
        self.list.setEnabled(not locked)
        self.results.setEnabled(not locked)
        self.new_button.setEnabled(not locked)
        self._locked = locked
        self._update_buttons()

    def _update_buttons(self) -> None:
        chosen = self.current_id() is not None and not self._locked
        self.rename_button.setEnabled(chosen)
        self.delete_button.setEnabled(chosen)
        is_open = self._open_id is not None
        self.export_md_action.setEnabled(is_open)
        self.export_json_action.setEnabled(is_open)
        self.import_action.setEnabled(not self._locked)

    # -- search ---------------------------------------------------------------------------

    def show_results(self, results: SearchResults) -> None:
        """The hits of a search, in place of the list (unless the field changed since)."""
        if " ".join(self.search.text().split()) != results.query:
            return
        self.results.clear()
        for hit in results.hits:
            where = (
                "title" if hit.message_id is None else ("you" if hit.role == Role.USER else "reply")
            )
            item = QListWidgetItem(f"{hit.title}\n{where}: {hit.snippet}")
            item.setData(ID_ROLE, hit.conversation_id)
            item.setData(MESSAGE_ROLE, hit.message_id)
            item.setToolTip(hit.snippet)
            self.results.addItem(item)
        if not results.hits:
            note = f"Nothing matches “{results.query}”."
        elif results.truncated:
            note = f"The first {len(results.hits)} matches: add words to narrow them."
        else:
            note = ""
        self.results_note.setText(note)
        self.results_note.setVisible(bool(note))

    def _on_search_text_changed(self, text: str) -> None:
        searching = bool(text.strip())
        self.list.setVisible(not searching)
        self.results.setVisible(searching)
        if not searching:
            self._search_timer.stop()
            self.results.clear()
            self.results_note.hide()
            self.search_requested.emit("")
            return
        self._search_timer.start()

    def _on_search_timer_timeout(self) -> None:
        words = " ".join(self.search.text().split())
        if words:
            self.search_requested.emit(words)

    def _on_results_item_activated(self, item: QListWidgetItem) -> None:
        if not self._locked:
            self.hit_opened.emit(item.data(ID_ROLE), item.data(MESSAGE_ROLE))

    def _on_list_item_clicked(self, item: QListWidgetItem) -> None:
        self._update_buttons()
        self.opened.emit(item.data(ID_ROLE))

    def _on_list_item_changed(self, item: QListWidgetItem) -> None:
        conversation_id = item.data(ID_ROLE)
        old = self._titles.get(conversation_id, "")
        title = " ".join(item.text().split())
        if not title or title == old:
            self.set_title(conversation_id, old)
            return
        self.rename_requested.emit(conversation_id, title)

    def _on_delete_clicked(self) -> None:
        conversation_id = self.current_id()
        if conversation_id is not None:
            self.delete_requested.emit(conversation_id)
