"""One reply of the chat: streamed into the transcript, shown with its figures, then saved
(also when the user stopped it or it failed, marked so)."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from roundhouse.api.chat import Message, NewMessage, ReplyStats, Role, SamplingParams
from roundhouse.client.chat_stream import ChatDelta, ChatDone, ChatFailed, ReplyMeter
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.chat import ChatCalls
from roundhouse.gui.chat_reply import ReplyDraft
from roundhouse.gui.widgets.chat_transcript import Transcript

# A stop that finds no stream to close (it had not begun) still ends the reply this soon.
STOP_GRACE_MS = 2000


class ReplyStream(QObject):
    """Emits `finished(Message | None)` once: the reply as saved, or None if it was not."""

    finished = Signal(object)

    def __init__(
        self,
        calls: ChatCalls,
        transcript: Transcript,
        conversation_id: str,
        model: str,
        history: list[dict[str, str]],
        params: SamplingParams,
    ) -> None:
        super().__init__()
        self._calls = calls
        self._transcript = transcript
        self.conversation_id = conversation_id
        self.draft = ReplyDraft(model)
        self.meter = ReplyMeter(model)
        self.stats: ReplyStats | None = None
        self.stopped = False
        self.ended = False
        self.widget = transcript.stream(self.draft)
        self.follow = calls.reply(model, history, params, self.meter)
        self.follow.received.connect(self._on_follow_received)
        self.follow.finished.connect(self._on_follow_finished)

    def stop(self) -> None:
        """Close the stream (the engine stops generating); what came is kept, marked stopped."""
        if self.ended or self.stopped:
            return
        self.stopped = True
        self.follow.cancel()
        QTimer.singleShot(STOP_GRACE_MS, self._on_follow_finished)

    def _on_follow_received(self, item: object) -> None:
        if isinstance(item, ChatDelta):
            self.draft.add(item.content, item.reasoning)
            self._transcript.changed()
        elif isinstance(item, ChatDone):
            self.stats = item.stats
        elif isinstance(item, ChatFailed):
            self.stats = item.stats.model_copy(update={"error": item.message})

    def _on_follow_finished(self) -> None:
        if self.ended:
            return
        self.ended = True
        stats = self.stats
        if stats is None:
            failure: Failure | None = self.follow.failure
            if failure is not None:
                stats = self.meter.stats(error=str(failure))
            else:
                stats = self.meter.stats(stopped=True)
        self._transcript.end_stream()
        content, reasoning = self.draft.content, self.draft.reasoning
        self.widget.show_final(content, reasoning, stats)
        message = NewMessage(
            role=Role.ASSISTANT, content=content, reasoning=reasoning or None, stats=stats
        )
        save = self._calls.save(self.conversation_id, message)
        save.succeeded.connect(self._on_save_succeeded)
        save.failed.connect(self._on_save_failed)

    def _on_save_succeeded(self, message: Message) -> None:
        self.widget.message = message
        self.finished.emit(message)

    def _on_save_failed(self, failure: Failure) -> None:
        self.widget.stats_label.setText(f"{self.widget.stats_label.text()} · not saved: {failure}")
        self.widget.stats_label.show()
        self.finished.emit(None)
