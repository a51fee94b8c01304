"""Step 4: the model started through the gateway, a first message, the reply as it streams."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton

from roundhouse.api.chat import ChatDelta, TurnEnded
from roundhouse.api.starters import ServedStarter, ServeStarterRequest
from roundhouse.gui.call import Failure, Follow
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.chat_reply import ReplyDraft, stats_line
from roundhouse.gui.first_run.state import GuideState, StepPage
from roundhouse.gui.first_run.words import SUGGESTED_PROMPT

REPAINT_MS = 100
# Offline with no model here, the guide still goes on: to the app, with what to do there.
NOTHING_TO_START = (
    "There is no model on this machine to start yet. Go Back to import a model file or "
    "download a starter, or choose Open Roundhouse and add one later on the Models page: "
    "Library ▸ Import GGUF…, a models folder in Settings, or Search."
)


class ChatStep(StepPage):
    def __init__(self, state: GuideState) -> None:
        super().__init__(
            state,
            "The first chat",
            "Roundhouse starts the model (loading takes a few seconds to a minute), then you "
            "talk to it. The chat is kept in the Chat page's history.",
        )
        self._ops = Ops(self)
        self.prompt = QLineEdit(SUGGESTED_PROMPT)
        self.prompt.returnPressed.connect(self.send)
        self.send_button = QPushButton("Send")
        self.send_button.clicked.connect(self.send)
        row = QHBoxLayout()
        row.addWidget(self.prompt, 1)
        row.addWidget(self.send_button)
        self.reply = QPlainTextEdit()
        self.reply.setReadOnly(True)
        self.reply.setPlaceholderText("The reply appears here as it is written.")
        self.stats = QLabel()
        self.stats.setObjectName("hint")
        self.body.addLayout(row)
        self.body.addWidget(self.reply, 1)
        self.body.addWidget(self.stats)
        self.draft: ReplyDraft | None = None
        self.follow: Follow | None = None
        self.replies = 0
        # The last exchange's turn, once the daemon kept it in the chat history.
        self.kept: Follow | None = None
        self._serving = False
        self._repaint = QTimer(self)
        self._repaint.setInterval(REPAINT_MS)
        self._repaint.timeout.connect(self._paint)
        self._update_buttons()

    @property
    def streaming(self) -> bool:
        return self.follow is not None and not self.follow.done

    def initializePage(self) -> None:
        option, engine = self.state.option, self.state.engine
        if option is None or engine is None or option.model is None:
            self.say(NOTHING_TO_START)
            return
        if self.state.served is not None or self._serving:
            return
        self._serving = True
        self.clear_problem()
        self.say(f"Starting {engine.title} with {option.title}…")
        request = ServeStarterRequest(
            engine=option.engine, model=option.model, ctx_size=self.state.ctx_size
        )
        call = self.state.calls.serve(request)
        self._ops.run(call, self._on_served, on_failure=self._on_serve_failed)
        self._update_buttons()

    def send(self) -> None:
        served = self.state.served
        text = self.prompt.text().strip()
        if served is None or not text or self.streaming:
            return
        self.draft = ReplyDraft(served.model)
        self.reply.clear()
        self.stats.clear()
        self.follow = follow = self.state.calls.reply(served.model, text, self.state.max_tokens)
        follow.received.connect(self._on_item)
        follow.finished.connect(self._on_reply_finished)
        self._repaint.start()
        self._update_buttons()

    def reply_text(self) -> str:
        return self.reply.toPlainText()

    def _on_served(self, served: ServedStarter) -> None:
        self._serving = False
        self.state.served = served
        self.say(f"✓ {served.instance.engine.value} serves it as “{served.model}”. Say something:")
        self._update_buttons()
        self.prompt.setFocus()

    def _on_serve_failed(self, failure: Failure) -> None:
        self._serving = False
        self.say("")
        self.show_problem("The model did not start", failure)
        self._update_buttons()

    def _on_item(self, item: object) -> None:
        if isinstance(item, ChatDelta) and self.draft is not None:
            self.draft.add(item.content, item.reasoning)
        elif isinstance(item, TurnEnded):
            stats = item.reply.stats
            if stats is not None and stats.error:
                self.stats.setText(f"The reply failed: {stats.error}")
            else:
                self.stats.setText(stats_line(stats))
            if item.message is not None:
                self.kept = self.follow

    def _on_reply_finished(self) -> None:
        self._repaint.stop()
        self._paint()
        failure = self.follow.failure if self.follow is not None else None
        if failure is not None:
            self.stats.setText(f"The reply failed: {failure}")
        else:
            self.replies += 1
        self._update_buttons()

    def _paint(self) -> None:
        if self.draft is not None and self.reply.toPlainText() != self.draft.content:
            self.reply.setPlainText(self.draft.content)

    def _update_buttons(self) -> None:
        ready = self.state.served is not None and not self.streaming
        self.send_button.setEnabled(ready)
        self.prompt.setEnabled(self.state.served is not None)
