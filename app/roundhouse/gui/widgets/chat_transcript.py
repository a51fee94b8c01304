"""The transcript: messages in a scroll area; the streaming reply repainted on a timer.

Deltas may come thousands a second. They only go into the reply's draft; a single-shot
timer repaints the streaming message at most every RENDER_MS, and nothing else is touched,
so the event loop stays free however fast an engine is. The view follows the bottom unless
the user scrolled up to read.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget

from roundhouse.api.chat import Message, Role
from roundhouse.gui.chat_reply import ReplyDraft
from roundhouse.gui.widgets.chat_message import MessageWidget

# At most 20 repaints a second of the streaming message.
RENDER_MS = 50
# Within this many pixels of the end counts as "at the bottom".
BOTTOM_SLACK_PX = 24
EMPTY_TEXT = "Send a message to start. Enter sends, Shift+Enter starts a new line."


class Transcript(QScrollArea):
    """Message widgets in order; `stream` binds the last one to a draft that is growing."""

    regenerate_requested = Signal(object)  # MessageWidget
    retry_requested = Signal(object)  # MessageWidget
    edit_requested = Signal(object, str)  # MessageWidget, the new text
    branch_requested = Signal(int)  # the id of the message version to show

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        container = QWidget()
        container.setObjectName("transcript")
        self._layout = QVBoxLayout(container)
        self._layout.setContentsMargins(8, 8, 8, 8)
        self._layout.setSpacing(8)
        self.empty_label = QLabel(EMPTY_TEXT)
        self.empty_label.setObjectName("hint")
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._layout.addWidget(self.empty_label)
        self._layout.addStretch(1)
        self.setWidget(container)
        self.messages: list[MessageWidget] = []
        self.follows_bottom = True
        self.renders = 0
        self._draft: ReplyDraft | None = None
        self._streaming: MessageWidget | None = None
        self._busy = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(RENDER_MS)
        self._timer.timeout.connect(self._render)
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(self._on_bar_value_changed)
        bar.rangeChanged.connect(self._on_bar_range_changed)

    # -- messages ---------------------------------------------------------------------

    def set_messages(self, messages: Iterable[Message]) -> None:
        self.clear()
        for message in messages:
            self.add_message(message)
        self.follows_bottom = True
        self.scroll_to_bottom()

    def clear(self) -> None:
        self.end_stream()
        for widget in self.messages:
            self._layout.removeWidget(widget)
            widget.deleteLater()
        self.messages = []
        self.empty_label.show()

    def add_message(self, message: Message) -> MessageWidget:
        widget = self._append(message.role, self._heading(message))
        widget.show_message(message)
        self.refresh_actions()
        return widget

    def remove_from(self, widget: MessageWidget) -> None:
        """Remove this message and every later one (an edit or a regenerate replaces them)."""
        if widget not in self.messages:
            return
        if self._streaming in self.messages[self.messages.index(widget) :]:
            self.end_stream()
        index = self.messages.index(widget)
        for gone in self.messages[index:]:
            self._layout.removeWidget(gone)
            gone.deleteLater()
        del self.messages[index:]
        self.empty_label.setVisible(not self.messages)
        self.refresh_actions()

    def widget_of(self, message_id: int) -> MessageWidget | None:
        return next((w for w in self.messages if w.message and w.message.id == message_id), None)

    # -- the streaming reply ----------------------------------------------------------

    def stream(self, draft: ReplyDraft) -> MessageWidget:
        """Add the reply's message; call `changed()` after each delta put in `draft`."""
        self.end_stream()
        self._draft = draft
        self._streaming = widget = self._append(Role.ASSISTANT, f"Assistant · {draft.model}")
        self.follows_bottom = True
        self.set_busy(True)
        return widget

    def changed(self) -> None:
        """The draft grew: repaint soon, coalesced with every other change until then."""
        if self._streaming is not None and not self._timer.isActive():
            self._timer.start()

    def end_stream(self) -> None:
        """Stop repainting the draft (the caller shows the end with `show_final`)."""
        self._timer.stop()
        if self._streaming is not None and self._draft is not None:
            self._render()
        self._streaming = self._draft = None

    @property
    def streaming(self) -> MessageWidget | None:
        return self._streaming

    def set_busy(self, busy: bool) -> None:
        self._busy = busy
        self.refresh_actions()

    def refresh_actions(self) -> None:
        last_reply = next((w for w in reversed(self.messages) if w.role == Role.ASSISTANT), None)
        for widget in self.messages:
            widget.set_actions(enabled=not self._busy, last_reply=widget is last_reply)

    def scroll_to_bottom(self) -> None:
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    # -- internals ----------------------------------------------------------------------

    def _heading(self, message: Message) -> str:
        if message.role == Role.USER:
            return "You"
        model = message.stats.model if message.stats is not None else None
        return f"Assistant · {model}" if model else "Assistant"

    def _append(self, role: Role, heading: str) -> MessageWidget:
        widget = MessageWidget(role, heading)
        widget.regenerate_clicked.connect(self.regenerate_requested)
        widget.retry_clicked.connect(self.retry_requested)
        widget.edit_submitted.connect(self.edit_requested)
        widget.branch_requested.connect(self.branch_requested)
        self.empty_label.hide()
        # Before the stretch, which keeps short transcripts at the top.
        self._layout.insertWidget(self._layout.count() - 1, widget)
        self.messages.append(widget)
        return widget

    def _render(self) -> None:
        if self._streaming is None or self._draft is None:
            return
        self.renders += 1
        self._streaming.show_partial(self._draft.content, self._draft.reasoning)

    def _on_bar_value_changed(self, value: int) -> None:
        self.follows_bottom = value >= self.verticalScrollBar().maximum() - BOTTOM_SLACK_PX

    def _on_bar_range_changed(self, _minimum: int, maximum: int) -> None:
        if self.follows_bottom:
            self.verticalScrollBar().setValue(maximum)
