"""Compare: two models answer the same prompt at once, in two columns, each reply rendered as
in the chat with its engine, time to first token and tokens/s. Nothing is kept (each side is
a daemon turn with `save: false`, client/chat_compare.py) unless Keep in history is asked:
then each exchange becomes a conversation of its own."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.chat import (
    ChatDelta,
    Conversation,
    NewMessage,
    ReplyStats,
    Role,
    SamplingParams,
    TurnEnded,
    TurnStarted,
)
from roundhouse.api.gateway import GatewayModelList
from roundhouse.client.chat_compare import compare_request, kept_conversation
from roundhouse.gui.call import Failure, Follow
from roundhouse.gui.calls.chat import ChatCalls
from roundhouse.gui.chat_reply import ReplyDraft, stats_line
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.widgets.chat_input import ChatInput
from roundhouse.gui.widgets.chat_markdown import MarkdownView, WrappedLabel
from roundhouse.gui.widgets.chat_settings import ModelPicker

# As the transcript: a streaming reply is repainted at most this often.
REPAINT_MS = 50
TWO_MODELS = "Pick two different models: one on each side."
NOTHING = "Type the prompt both models answer."
# A stop that finds no stream to close (it had not begun) still ends the side this soon.
STOP_GRACE_MS = 2000


class CompareColumn(QFrame):
    """One side: its model, the reply as it streams, then its figures or its error."""

    def __init__(self, calls: ChatCalls, side: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("compareColumn")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self._calls = calls
        self.picker = ModelPicker()
        self.picker.setToolTip(f"The model on the {side}")
        self.state = QLabel()
        self.state.setObjectName("hint")
        self.body = MarkdownView()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        holder = QWidget()
        holder_layout = QVBoxLayout(holder)
        holder_layout.addWidget(self.body)
        holder_layout.addStretch(1)
        scroll.setWidget(holder)
        self.stats_label = QLabel()
        self.stats_label.setObjectName("hint")
        self.stats_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label = WrappedLabel()
        self.error_label.setObjectName("dialogError")
        self.error_label.hide()
        layout = QVBoxLayout(self)
        layout.addWidget(self.picker)
        layout.addWidget(self.state)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.error_label)
        layout.addWidget(self.stats_label)
        self.draft: ReplyDraft | None = None
        self.follow: Follow | None = None
        self.turn: TurnStarted | None = None
        self.stats: ReplyStats | None = None
        self.error: str | None = None
        # The reply as the daemon ended it (what Keep in history saves).
        self.reply: NewMessage | None = None
        # When the daemon began and ended this side's turn (perf_counter): both overlap.
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.stopped = False

    @property
    def running(self) -> bool:
        return self.follow is not None and not self.follow.done

    def ask(self, prompt: str, system_prompt: str, params: SamplingParams) -> None:
        model = self.picker.current_model()
        self.draft = ReplyDraft(model)
        self.turn, self.stats, self.error, self.reply = None, None, None, None
        self.started_at = self.ended_at = None
        self.stopped = False
        self.body.set_markdown("")
        self.stats_label.setText("")
        self.error_label.hide()
        self.state.setText("Waiting for the first token…")
        self.follow = self._calls.turn(compare_request(model, prompt, system_prompt, params))
        self.follow.received.connect(self._on_received)
        self.follow.finished.connect(self._on_finished)

    def stop(self) -> None:
        if not self.running or self.stopped:
            return
        self.stopped = True
        if self.turn is None:
            assert self.follow is not None
            self.follow.cancel()  # closing the stream before it began stops it
            # Not yet opened, there is no stream to close: it ends here all the same.
            QTimer.singleShot(STOP_GRACE_MS, self._give_up)
            return
        stop = self._calls.stop_turn(self.turn.turn_id)
        stop.failed.connect(lambda _failure: None)  # ended meanwhile: its end is on the way

    def _give_up(self) -> None:
        if self.follow is not None and not self.follow.done:
            self.follow.mark_cancelled()

    def repaint_reply(self) -> None:
        if self.draft is not None and self.running:
            self.body.set_markdown(self.draft.content, final=False)

    def _on_received(self, item: object) -> None:
        if self.follow is None or self.follow.done:
            return  # given up on (stopped before it began)
        if isinstance(item, ChatDelta) and self.draft is not None:
            if not self.draft.deltas:
                self.state.setText("Answering…")
            self.draft.add(item.content, item.reasoning)
        elif isinstance(item, TurnStarted):
            self.turn = item
            self.started_at = time.perf_counter()
        elif isinstance(item, TurnEnded):
            self.ended_at = time.perf_counter()
            self.reply = item.reply
            self.stats = item.reply.stats or ReplyStats(model=self.picker.current_model())
            if self.draft is not None:
                self.draft = ReplyDraft(self.draft.model)
                self.draft.add(item.reply.content, item.reply.reasoning or "")

    def _on_finished(self) -> None:
        follow = self.follow
        assert follow is not None and self.draft is not None
        self.body.set_markdown(self.draft.content, final=True)
        if self.stats is None:
            # It ended before the daemon said how: refused (in words), or stopped.
            failure = follow.failure
            self.stats = ReplyStats(
                model=self.draft.model,
                stopped=failure is None,
                error=None if failure is None else str(failure),
            )
        stats = self.stats
        error = stats.error
        self.error = error
        self.error_label.setText(f"The reply failed: {error}" if error else "")
        self.error_label.setVisible(bool(error))
        self.stats_label.setText(stats_line(stats))
        self.state.setText("Stopped" if stats.stopped else "")
        if self.reply is None:
            self.reply = NewMessage(role=Role.ASSISTANT, content=self.draft.content, stats=stats)


class CompareWindow(QDialog):
    """Two columns on one prompt; opened from the Chat page's Compare button. `kept(list)`
    gives the conversations Keep in history made."""

    kept = Signal(list)

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Compare two models")
        self.setObjectName("compareWindow")
        self._bridge = bridge
        # The Chat page's settings when it opened this: both sides get the same.
        self.system_prompt = ""
        self.params = SamplingParams()
        calls = ChatCalls(bridge)
        self.columns = (CompareColumn(calls, "left"), CompareColumn(calls, "right"))
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.setChildrenCollapsible(False)
        for column in self.columns:
            splitter.addWidget(column)
        self.prompt = ChatInput()
        self.prompt.setPlaceholderText("The prompt both models answer (Enter sends)")
        self.prompt.submitted.connect(self.run)
        self.compare_button = QPushButton("Compare")
        self.compare_button.setDefault(True)
        self.compare_button.setToolTip("Send the prompt to both models at once")
        self.compare_button.clicked.connect(self.run)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop both replies")
        self.stop_button.clicked.connect(self.stop)
        self.keep_button = QPushButton("Keep in history")
        self.keep_button.setToolTip("Keep each exchange as a conversation, named with its model")
        self.keep_button.clicked.connect(self.keep)
        self.kept_label = QLabel()
        self.kept_label.setObjectName("hint")
        self.asked = ""  # the prompt of the replies shown
        self._keeping: list[Conversation] = []
        self.message_label = QLabel()
        self.message_label.setObjectName("dialogError")
        self.message_label.setWordWrap(True)
        self.message_label.hide()
        note = QLabel(
            "Both answer at the same time and nothing is kept in the history; on one "
            "machine each one's speed is measured while the other runs too."
        )
        note.setObjectName("hint")
        note.setWordWrap(True)
        buttons = QVBoxLayout()
        buttons.addWidget(self.compare_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.keep_button)
        buttons.addStretch(1)
        entry = QHBoxLayout()
        entry.addWidget(self.prompt, 1)
        entry.addLayout(buttons)
        layout = QVBoxLayout(self)
        layout.addWidget(note)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.message_label)
        layout.addWidget(self.kept_label)
        layout.addLayout(entry)
        self._repaint = QTimer(self)
        self._repaint.setInterval(REPAINT_MS)
        self._repaint.timeout.connect(self._on_repaint)
        bridge.state_changed.connect(self._update_actions)
        self.resize(1100, 720)
        self._update_actions()

    @property
    def busy(self) -> bool:
        return any(column.running for column in self.columns)

    def set_models(self, listed: GatewayModelList, first: str | None = None) -> None:
        """Offer the models the gateway lists: `first` (else the one picked) on the left,
        the one picked (else another) on the right. Not while the replies run."""
        if self.busy:
            return
        left, right = self.columns
        keep_right = right.picker.current_model()
        left.picker.set_models(listed, first or left.picker.current_model() or None)
        other = next((m.id for m in listed.models if m.id != left.picker.current_model()), None)
        right.picker.set_models(listed, keep_right or other)

    def run(self) -> None:
        if self.busy or self._bridge.state != ConnectionState.CONNECTED:
            return
        models = [column.picker.current_model() for column in self.columns]
        if not all(models) or models[0] == models[1]:
            self._say(TWO_MODELS)
            return
        text = self.prompt.toPlainText().strip()
        if not text:
            self._say(NOTHING)
            return
        self._say("")
        self.kept_label.setText("")
        self.asked = text
        for column in self.columns:
            column.ask(text, self.system_prompt, self.params)
            assert column.follow is not None
            column.follow.finished.connect(self._on_column_finished)
        self._repaint.start()
        self._update_actions()

    def stop(self) -> None:
        for column in self.columns:
            column.stop()
        self._update_actions()

    def keep(self) -> None:
        """Each exchange shown becomes a conversation of its own (the reply with its
        figures), named with its model."""
        if self.busy or self._keeping or not self._keepable():
            return
        calls = ChatCalls(self._bridge)
        made: list[Conversation] = []
        self._keeping = made
        for column in self.columns:
            assert column.reply is not None
            new = kept_conversation(
                self.asked,
                column.picker.current_model(),
                column.reply,
                self.system_prompt,
                self.params,
            )
            call = calls.create(new)
            call.succeeded.connect(lambda kept, made=made: self._on_kept(made, kept))
            call.failed.connect(self._on_not_kept)
        self._update_actions()

    def _keepable(self) -> bool:
        return bool(self.asked) and all(c.reply is not None for c in self.columns)

    def _on_kept(self, made: list[Conversation], conversation: Conversation) -> None:
        made.append(conversation)
        if len(made) == len(self.columns):
            self._keeping = []
            self.asked = ""  # kept once
            self.kept_label.setText(
                "Kept in the history: " + ", ".join(f"“{c.title}”" for c in made) + "."
            )
            self.kept.emit([c.id for c in made])
            self._update_actions()

    def _on_not_kept(self, failure: Failure) -> None:
        self._keeping = []
        self._say(f"Not kept: {failure}")
        self._update_actions()

    def _on_repaint(self) -> None:
        for column in self.columns:
            column.repaint_reply()

    def _on_column_finished(self) -> None:
        if not self.busy:
            self._repaint.stop()
        self._update_actions()

    def _say(self, text: str) -> None:
        self.message_label.setText(text)
        self.message_label.setVisible(bool(text))

    def _update_actions(self, *_: object) -> None:
        connected = self._bridge.state == ConnectionState.CONNECTED
        self.compare_button.setEnabled(connected and not self.busy)
        self.stop_button.setEnabled(self.busy)
        self.keep_button.setEnabled(not self.busy and not self._keeping and self._keepable())
        for column in self.columns:
            column.picker.setEnabled(not self.busy)

    def done(self, result: int) -> None:
        # Closing the window stops what still runs: nothing is kept, nothing should go on.
        self.stop()
        super().done(result)
