"""Quick chat's window: a small always-on-top window bound to the active model, one line to
ask.

Esc hides it (the app lives on); "Open in chat" moves the exchange into a conversation of
the chat page. The reply streams through the daemon's gateway and is repainted on a timer,
however fast the tokens come.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QSettings, Qt
from PySide6.QtGui import (
    QCloseEvent,
    QGuiApplication,
    QHideEvent,
    QKeyEvent,
    QKeySequence,
    QShowEvent,
)
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from roundhouse.api.chat import (
    ChatDelta,
    Conversation,
    ReplyStats,
    SamplingParams,
    TurnEnded,
    TurnStarted,
)
from roundhouse.gui.active_model import ActiveModel
from roundhouse.gui.call import Call, Failure, Follow
from roundhouse.gui.calls.chat import ChatCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.quick_chat import SHORTCUT
from roundhouse.gui.quick_chat_exchange import Exchange, Turn
from roundhouse.gui.widgets.active_model_line import ActiveModelLine
from roundhouse.gui.widgets.reply_scroll import ReplyScroll

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge
    from roundhouse.gui.main_window import MainWindow

GEOMETRY_KEY = "quick_chat/geometry"
CHOOSE_FIRST = "Choose a model first (Model ▾), or start one on the Engines page."
FINDING = "Finding the active model…"


class QuickChatWindow(QWidget):
    """A tool window kept above the others; its exchange lasts until New or Open in chat."""

    def __init__(
        self,
        bridge: DaemonBridge,
        main_window: MainWindow,
        active_model: ActiveModel,
        *,
        geometry_store: QSettings | None = None,
    ) -> None:
        # No parent: a tool window owned by a hidden main window may not show at all.
        super().__init__(None, Qt.WindowType.Tool | Qt.WindowType.WindowStaysOnTopHint)
        self.setObjectName("quickChat")
        self.setWindowTitle("Quick chat — Roundhouse")
        # The key that opened it (the settings may change it): it hides the window too.
        self.key = QKeySequence(SHORTCUT)
        self._bridge = bridge
        self._calls = ChatCalls(bridge)
        self._ops = Ops(self)
        self._main = main_window
        self._active = active_model
        self._geometry_store = geometry_store
        self.exchange = Exchange()
        self.params = SamplingParams()
        self.follow: Follow | None = None
        self._turn: Turn | None = None
        # The turn the daemon runs for it (to stop it by), and the model asked.
        self._turn_id: str | None = None
        self._asked: str | None = None
        self._moving: Call | None = None
        self.conversation: Conversation | None = None
        # Enter pressed before the daemon said which model is active: sent once it does.
        self._waiting_for_model = False

        self.model_line = ActiveModelLine(active_model)
        self.model_line.chat_page_requested.connect(self._open_chat_page)
        self.model_line.engines_page_requested.connect(self._open_engines_page)
        self.input = QLineEdit()
        self.input.setPlaceholderText("Ask something, then Enter")
        self.input.returnPressed.connect(self.send)
        self.reply = ReplyScroll(lambda: (self.exchange.markdown(), not self.streaming))
        self.status_label = QLabel()
        self.status_label.setObjectName("hint")
        self.status_label.setWordWrap(True)
        self.stop_button = QPushButton("Stop")
        self.stop_button.clicked.connect(self.stop)
        self.new_button = QPushButton("New")
        self.new_button.setToolTip("Clear the exchange and start again")
        self.new_button.clicked.connect(self.clear)
        self.open_button = QPushButton("Open in chat")
        self.open_button.setToolTip("Move this exchange into a conversation on the chat page")
        self.open_button.clicked.connect(self.open_in_chat)

        buttons = QHBoxLayout()
        buttons.addWidget(self.status_label, 1)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.new_button)
        buttons.addWidget(self.open_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.model_line)
        layout.addWidget(self.input)
        layout.addWidget(self.reply, 1)
        layout.addLayout(buttons)
        active_model.failed.connect(self._on_active_model_failed)
        active_model.changed.connect(self._on_active_model_changed)
        self._restore_geometry()
        self._update_actions()

    @property
    def model(self) -> str | None:
        return self._active.active

    @property
    def streaming(self) -> bool:
        return self.follow is not None

    def _update_actions(self) -> None:
        busy = self.streaming or self._moving is not None
        self.input.setEnabled(not self.streaming)
        self.stop_button.setVisible(self.streaming)
        self.new_button.setEnabled(not busy and not self.exchange.empty)
        self.open_button.setEnabled(not busy and not self.exchange.empty)

    # -- asking -----------------------------------------------------------------------------

    def send(self) -> None:
        prompt = self.input.text().strip()
        model = self.model
        if not prompt or self.streaming:
            return
        if not model:
            if self._active.loaded:
                self.status_label.setText(CHOOSE_FIRST)
            else:
                self._waiting_for_model = True
                self.status_label.setText(FINDING)
                self._active.refresh()
            return
        self._waiting_for_model = False
        turn = self.exchange.ask(prompt)
        self.input.clear()
        self._turn, self._turn_id, self._asked = turn, None, model
        # Not saved: quick chat's exchange lasts until New, or moves whole with Open in chat.
        request = self.exchange.request(model, self.params)
        self.follow = follow = self._calls.turn(request)
        follow.received.connect(self._on_follow_received)
        follow.failed.connect(self._on_follow_failed)
        follow.cancelled.connect(self._on_follow_cancelled)
        follow.finished.connect(self._on_follow_finished)
        self.status_label.setText(f"Asking {model}…")
        self.reply.show_now()
        self._update_actions()

    def _on_active_model_changed(self) -> None:
        """A hint that no longer applies goes: a model is active now (picked, started)."""
        if self.model and self.status_label.text() in (CHOOSE_FIRST, FINDING):
            self.status_label.setText("")
        if self._waiting_for_model:
            self._waiting_for_model = False
            if self.model:
                self.send()
            else:
                self.status_label.setText(CHOOSE_FIRST)

    def _on_active_model_failed(self, message: str) -> None:
        self._waiting_for_model = False
        self.status_label.setText(message)

    def stop(self) -> None:
        """The daemon stops the reply and the stream ends with its figures; before the turn
        began, closing the stream stops it."""
        if self.follow is None:
            return
        turn_id = self._turn_id
        if turn_id is None:
            self.follow.cancel()
            return
        self._ops.run(self._calls.stop_turn(turn_id), on_failure=self._on_stop_failed)

    def clear(self) -> None:
        if self.streaming:
            return
        self.exchange = Exchange()
        self.conversation = None
        self.status_label.setText("")
        self.reply.show_now()
        self._update_actions()
        self.input.setFocus()

    def _on_follow_received(self, event: TurnStarted | ChatDelta | TurnEnded) -> None:
        turn = self._turn
        if turn is None:
            return
        if isinstance(event, ChatDelta):
            turn.reply += event.content
            turn.reasoning += event.reasoning
            self.reply.schedule()
        elif isinstance(event, TurnStarted):
            self._turn_id = event.turn_id
        else:
            turn.stats = event.reply.stats
            if turn.stats is not None and turn.stats.error:
                turn.error = turn.stats.error

    def _on_follow_failed(self, failure: Failure) -> None:
        if self._turn is not None:
            self._turn.error = str(failure)

    def _on_follow_cancelled(self) -> None:
        if self._turn is not None:
            self._turn.stats = ReplyStats(model=self._asked, stopped=True)

    def _on_follow_finished(self) -> None:
        turn, self._turn, self.follow = self._turn, None, None
        self.reply.show_now()
        self.status_label.setText(turn.outcome() if turn is not None else "")
        self._update_actions()
        self.input.setFocus()

    # -- moving the exchange to the chat page -----------------------------------------------

    def open_in_chat(self) -> None:
        if self.exchange.empty or self.streaming or self._moving is not None:
            return
        new = self.exchange.conversation(self.model)
        self.status_label.setText("Moving the exchange to the chat…")
        self._moving = call = self._ops.run(
            self._calls.create(new),
            self._on_moved,
            on_failure=lambda failure: self.status_label.setText(
                f"Not moved to the chat: {failure}"
            ),
        )
        call.finished.connect(self._on_move_finished)
        self._update_actions()

    def _on_moved(self, conversation: Conversation) -> None:
        self.conversation = conversation
        self.exchange = Exchange()
        self.status_label.setText("")
        self.reply.show_now()
        self._main.show_chat(conversation.id)
        self.hide()

    def _on_stop_failed(self, failure: Failure) -> None:
        # Not found: the reply ended meanwhile, and its end is on the way. Anything else is
        # said: the reply may still be running.
        if failure.status != 404:
            self.status_label.setText(f"Not stopped: {failure}")

    def _on_move_finished(self) -> None:
        self._moving = None
        self._update_actions()

    def _open_chat_page(self) -> None:
        self._main.show_chat()

    def _open_engines_page(self) -> None:
        self._main.show_page("Engines")
        self._main.bring_to_front()

    # -- the window -------------------------------------------------------------------------

    def present(self) -> None:
        """Show it above the others with the cursor in the input, bound to the active model."""
        self._active.refresh()
        self.show()
        self.raise_()
        self.activateWindow()
        self.input.setFocus()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        # Esc hides, and so does the shortcut that opened it (when the main window is hidden
        # its application-wide shortcut is not active, and the key arrives here).
        pressed = QKeySequence(event.keyCombination())
        if event.key() == Qt.Key.Key_Escape or pressed == self.key:
            self.hide()
            return
        super().keyPressEvent(event)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.model_line.update_text()

    def hideEvent(self, event: QHideEvent) -> None:
        self._save_geometry()
        super().hideEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        # Closing is hiding: the exchange stays for the next opening.
        event.ignore()
        self.hide()

    def _restore_geometry(self) -> None:
        saved = self._geometry_store.value(GEOMETRY_KEY) if self._geometry_store else None
        if isinstance(saved, QByteArray) and self.restoreGeometry(saved):
            return
        self.resize(560, 380)
        screen = QGuiApplication.primaryScreen()
        if screen is not None:
            area = screen.availableGeometry()
            self.move(area.center().x() - 280, area.top() + area.height() // 5)

    def _save_geometry(self) -> None:
        if self._geometry_store is not None:
            self._geometry_store.setValue(GEOMETRY_KEY, self.saveGeometry())
