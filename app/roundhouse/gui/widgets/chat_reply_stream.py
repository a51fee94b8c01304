"""One turn of the chat, run by the daemon: the reply streamed into the transcript and shown
with its figures once it ends (the daemon saves it, stopped and failed ones marked so)."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from roundhouse.api.chat import ChatDelta, ReplyStats, TurnEnded, TurnRequest, TurnStarted
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.chat import ChatCalls
from roundhouse.gui.chat_reply import ReplyDraft
from roundhouse.gui.widgets.chat_message import MessageWidget
from roundhouse.gui.widgets.chat_transcript import Transcript

# A stop that finds no stream to close (it had not begun) still ends the reply this soon.
STOP_GRACE_MS = 2000


class ReplyStream(QObject):
    """Emits `started(TurnStarted)` once the daemon has the user's message (the reply's
    widget is added just after), `refused(Failure)` if it never began, and
    `finished(Message | None)` once it began and ended: the reply as saved, or None."""

    started = Signal(object)
    refused = Signal(object)
    finished = Signal(object)

    def __init__(
        self, calls: ChatCalls, transcript: Transcript, model: str, request: TurnRequest
    ) -> None:
        super().__init__()
        self._calls = calls
        self._transcript = transcript
        self.draft = ReplyDraft(model)
        self.turn: TurnStarted | None = None
        self.ended: TurnEnded | None = None
        self.widget: MessageWidget | None = None
        self.stopped = False
        self.done = False
        self.follow = calls.turn(request)
        self.follow.received.connect(self._on_follow_received)
        self.follow.finished.connect(self._on_follow_finished)

    @property
    def conversation_id(self) -> str | None:
        conversation = self.turn.conversation if self.turn is not None else None
        return conversation.id if conversation is not None else None

    def stop(self) -> None:
        """The daemon stops the reply; what came is kept, marked stopped, and the stream
        ends with it. Before the turn began, closing the stream stops it."""
        if self.done or self.stopped:
            return
        self.stopped = True
        if self.turn is None:
            self.follow.cancel()
            QTimer.singleShot(STOP_GRACE_MS, self._on_follow_finished)
            return
        stop = self._calls.stop_turn(self.turn.turn_id)
        # Not found: the reply ended meanwhile, and its end is on the way.
        stop.failed.connect(lambda _failure: None)

    def _on_follow_received(self, item: object) -> None:
        if isinstance(item, ChatDelta):
            self.draft.add(item.content, item.reasoning)
            self._transcript.changed()
        elif isinstance(item, TurnStarted):
            self.turn = item
            self.draft.model = item.model
            self.started.emit(item)
            self.widget = self._transcript.stream(self.draft)
        elif isinstance(item, TurnEnded):
            self.ended = item

    def _on_follow_finished(self) -> None:
        if self.done:
            return
        self.done = True
        failure: Failure | None = self.follow.failure
        if self.widget is None:
            self.refused.emit(
                failure or Failure("Stopped", "The reply was stopped before it began.")
            )
            return
        self._transcript.end_stream()
        content, reasoning = self.draft.content, self.draft.reasoning
        ended = self.ended
        if ended is None:
            # The stream broke before the daemon said how the reply ended.
            error = None if failure is None else str(failure)
            stats = ReplyStats(model=self.draft.model, stopped=error is None, error=error)
            self.widget.show_final(content, reasoning, stats)
            self.finished.emit(None)
            return
        self.widget.show_final(content, reasoning, ended.reply.stats)
        if ended.message is None:
            label = self.widget.stats_label
            label.setText(f"{label.text()} · not saved: {ended.not_saved}")
            label.show()
        else:
            self.widget.set_message(ended.message)
        self.finished.emit(ended.message)
