"""One message of the transcript: its text, the reasoning folded, a reply's figures or its
error with Retry, and its actions (Copy; Regenerate a reply; Edit and resend a message of
the user's; "‹ 2/3 ›" to switch between the versions those leave)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.chat import Message, ReplyStats, Role
from roundhouse.gui.chat_reply import stats_line
from roundhouse.gui.widgets.chat_attachments import show_thumbnails
from roundhouse.gui.widgets.chat_markdown import MarkdownView, WrappedLabel

THINKING = "Thinking…"
THOUGHT = "Thinking"


class ReasoningFold(QWidget):
    """The reasoning an engine sent, folded under a "Thinking…" button; filled when opened."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.toggle = QToolButton()
        self.toggle.setText(THINKING)
        self.toggle.setCheckable(True)
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.toggled.connect(self._on_toggle_toggled)
        self.body = WrappedLabel()
        self.body.setObjectName("hint")
        self.body.setTextFormat(Qt.TextFormat.PlainText)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.body)
        self.text = ""
        self.hide()

    @property
    def expanded(self) -> bool:
        return self.toggle.isChecked()

    def set_text(self, text: str, *, streaming: bool) -> None:
        self.text = text
        self.toggle.setText(THINKING if streaming else THOUGHT)
        self.setVisible(bool(text))
        # Folded, the text is not laid out at all: a long chain of thought costs nothing.
        if self.expanded:
            self.body.setText(text)

    def _on_toggle_toggled(self, expanded: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        if expanded:
            self.body.setText(self.text)
        self.body.setVisible(expanded)


def _action(text: str, tip: str) -> QToolButton:
    button = QToolButton()
    button.setText(text)
    button.setToolTip(tip)
    button.setAutoRaise(True)
    return button


class MessageWidget(QFrame):
    """A user's message (plain text) or a reply (Markdown); `message` once it is saved."""

    regenerate_clicked = Signal(object)  # this widget
    retry_clicked = Signal(object)  # this widget
    edit_submitted = Signal(object, str)  # this widget, the new text
    branch_requested = Signal(int)  # the id of the version of this message to show

    def __init__(self, role: Role, heading: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.role = role
        self.message: Message | None = None
        self.stats: ReplyStats | None = None
        self.setObjectName("chatMessage")
        self.setProperty("role", role.value)
        if role == Role.USER:
            # A palette role, not a style sheet: it reads on light and dark themes, and
            # style sheets would slow every repaint of a long transcript.
            self.setAutoFillBackground(True)
            self.setBackgroundRole(QPalette.ColorRole.AlternateBase)
        self.heading = QLabel(heading or ("You" if role == Role.USER else "Assistant"))
        self.heading.setObjectName("sectionTitle")
        self.reasoning = ReasoningFold()
        self.body = MarkdownView()
        self.plain = WrappedLabel()
        self.plain.setTextFormat(Qt.TextFormat.PlainText)
        self.plain.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.editor: QPlainTextEdit | None = None
        self.stats_label = QLabel()
        self.stats_label.setObjectName("hint")
        self.stats_label.hide()
        self.error_label = WrappedLabel()
        self.error_label.setObjectName("dialogError")
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.retry_button = QPushButton("Retry")
        self.retry_button.clicked.connect(lambda: self.retry_clicked.emit(self))
        self.error_row = QWidget()
        error_layout = QHBoxLayout(self.error_row)
        error_layout.setContentsMargins(0, 0, 0, 0)
        error_layout.addWidget(self.error_label, 1)
        error_layout.addWidget(self.retry_button, 0, Qt.AlignmentFlag.AlignTop)
        self.error_row.hide()
        self.copy_button = _action("Copy", "Copy this message")
        self.copy_button.clicked.connect(self.copy)
        self.regenerate_button = _action("Regenerate", "Ask for this reply again")
        self.regenerate_button.clicked.connect(lambda: self.regenerate_clicked.emit(self))
        self.edit_button = _action("Edit", "Change this message and send it again")
        self.edit_button.clicked.connect(self.start_editing)
        self.previous_button = _action("‹", "Show the previous version of this message")
        self.previous_button.clicked.connect(lambda: self._switch(-1))
        self.branch_label = QLabel()
        self.branch_label.setObjectName("hint")
        self.next_button = _action("›", "Show the next version of this message")
        self.next_button.clicked.connect(lambda: self._switch(1))
        self.switcher = QWidget()
        switcher = QHBoxLayout(self.switcher)
        switcher.setContentsMargins(0, 0, 0, 0)
        switcher.setSpacing(2)
        for part in (self.previous_button, self.branch_label, self.next_button):
            switcher.addWidget(part)
        self.switcher.hide()
        self.action_bar = QWidget()
        actions = QHBoxLayout(self.action_bar)
        actions.setContentsMargins(0, 0, 0, 0)
        actions.addWidget(self.switcher)
        actions.addWidget(self.copy_button)
        actions.addWidget(self.regenerate_button)
        actions.addWidget(self.edit_button)
        actions.addStretch(1)
        actions.addWidget(self.stats_label)
        user = role == Role.USER
        self.body.setVisible(not user)
        self.plain.setVisible(user)
        self.regenerate_button.hide()
        self.edit_button.setVisible(user)
        self._layout = layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 6)
        layout.setSpacing(4)
        for widget in (self.heading, self.reasoning, self.body, self.plain, self.error_row):
            layout.addWidget(widget)
        layout.addWidget(self.action_bar)

    @property
    def content(self) -> str:
        return self.plain.text() if self.role == Role.USER else self.body.markdown

    # -- what the transcript calls -------------------------------------------------------

    def show_message(self, message: Message) -> None:
        """A saved message, whole."""
        self.set_message(message)
        self.show_final(message.content, message.reasoning or "", message.stats)
        show_thumbnails(self, message.images)

    def set_message(self, message: Message) -> None:
        """The message as saved: its id, and the versions beside it for the switcher."""
        self.message = message
        many = message.branches > 1
        self.switcher.setVisible(many)
        if many:
            self.branch_label.setText(f"{message.branch}/{message.branches}")
            self.branch_label.setAccessibleName(f"version {message.branch} of {message.branches}")
            self.previous_button.setEnabled(message.branch > 1)
            self.next_button.setEnabled(message.branch < message.branches)

    def _switch(self, step: int) -> None:
        if self.message is None:
            return
        versions = self.message.sibling_ids
        index = self.message.branch - 1 + step
        if 0 <= index < len(versions):
            self.branch_requested.emit(versions[index])

    def show_partial(self, content: str, reasoning: str) -> None:
        """A reply while it streams: only what changed is re-rendered."""
        self.reasoning.set_text(reasoning, streaming=True)
        self.body.set_markdown(content, final=False)

    def show_final(self, content: str, reasoning: str, stats: ReplyStats | None) -> None:
        self.stats = stats
        if self.role == Role.USER:
            self.plain.setText(content)
        else:
            self.reasoning.set_text(reasoning, streaming=False)
            self.body.set_markdown(content, final=True)
            self.body.setVisible(bool(content) or stats is None or stats.error is None)
        line = stats_line(stats)
        self.stats_label.setText(line)
        self.stats_label.setVisible(bool(line))
        error = stats.error if stats is not None else None
        self.error_label.setText(f"The reply failed: {error}" if error else "")
        self.error_row.setVisible(bool(error))

    def set_actions(self, *, enabled: bool, last_reply: bool) -> None:
        """Actions need a saved message and no reply streaming. Regenerate is on every reply
        (the old one stays, a version to switch back to); `last_reply` is kept for callers
        that mark the newest."""
        saved = enabled and self.message is not None
        for button in (self.copy_button, self.regenerate_button, self.edit_button):
            button.setEnabled(saved)
        self.copy_button.setEnabled(bool(self.content))
        self.retry_button.setEnabled(enabled)
        for button in (self.previous_button, self.next_button):
            button.setEnabled(saved and self._can_step(button is self.next_button))
        failed = self.stats is not None and self.stats.error is not None
        self.regenerate_button.setVisible(self.role == Role.ASSISTANT and not failed)

    def _can_step(self, forward: bool) -> bool:
        if self.message is None:
            return False
        return self.message.branch < self.message.branches if forward else self.message.branch > 1

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.content)

    # -- editing a user's message in place -----------------------------------------------

    def start_editing(self) -> None:
        if self.editor is not None:
            return
        self.editor = QPlainTextEdit(self.content)
        self.editor.setObjectName("messageEditor")
        send = QPushButton("Send")
        send.setDefault(True)
        cancel = QPushButton("Cancel")
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(cancel)
        row.addWidget(send)
        self._edit_box = box = QWidget()
        box_layout = QVBoxLayout(box)
        box_layout.setContentsMargins(0, 0, 0, 0)
        box_layout.addWidget(self.editor)
        box_layout.addLayout(row)
        self._layout.insertWidget(self._layout.indexOf(self.plain), box)
        self.plain.hide()
        self.action_bar.hide()
        send.clicked.connect(self.submit_edit)
        cancel.clicked.connect(self.stop_editing)
        self.editor.setFocus()

    def submit_edit(self) -> None:
        if self.editor is None:
            return
        text = self.editor.toPlainText().strip()
        if text:
            self.stop_editing()
            self.edit_submitted.emit(self, text)

    def stop_editing(self) -> None:
        if self.editor is None:
            return
        self._edit_box.deleteLater()
        self.editor = None
        self.plain.show()
        self.action_bar.show()
