"""The Chat page: conversations kept by the daemon, replies streamed through its gateway.

A conversation is created with its first message. Each turn is one call the daemon runs: it
saves the message, streams the reply into the transcript and saves it when it ends, is stopped
or fails; an edit or a regenerate adds a version beside that message, the old one kept to
switch back to (chat_history_actions.py: the switcher, search, export and import, presets).
While a reply streams, the open conversation stays open.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.chat import (
    Conversation,
    ConversationList,
    ConversationSummary,
    ConversationUpdate,
    Message,
    NewConversation,
    Role,
    TurnRequest,
    TurnStarted,
)
from roundhouse.gui.active_model import ActiveModel
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.chat import ChatCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.chat_history_actions import ChatHistoryActions
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.widgets.chat_attachments import ChatAttachments
from roundhouse.gui.widgets.chat_compare import CompareWindow
from roundhouse.gui.widgets.chat_conversations import ConversationsView
from roundhouse.gui.widgets.chat_input import ChatInput
from roundhouse.gui.widgets.chat_message import MessageWidget
from roundhouse.gui.widgets.chat_reply_stream import ReplyStream
from roundhouse.gui.widgets.chat_settings import ChatSettingsPanel, ModelPicker
from roundhouse.gui.widgets.chat_transcript import Transcript
from roundhouse.gui.widgets.confirm import ask_to_confirm

NO_MODEL = "Choose a model first: start one on the Engines page, or save a preset for it."


class ChatPage(QWidget):
    """The conversation list on the left; the open conversation, its settings and the input."""

    title = "Chat"

    def __init__(
        self,
        bridge: DaemonBridge,
        active_model: ActiveModel | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._calls = ChatCalls(bridge)
        self._ops = Ops(self)
        # Shared with quick chat and the tray: a new chat opens on the active model, and a
        # model picked here becomes the active one there too.
        self._active = active_model or ActiveModel(bridge)
        self._followed: str | None = None
        self.conversation: Conversation | None = None
        # The turn being sent (until the daemon has the message), then the reply streaming.
        self._sending: ReplyStream | None = None
        self.reply: ReplyStream | None = None
        self._listed: list[ConversationSummary] = []
        self._wanted: str | None = None
        self.confirm_box: QMessageBox | None = None

        self.conversations = ConversationsView()
        self.conversations.opened.connect(self.open_conversation)
        self.conversations.new_requested.connect(self.new_chat)
        self.conversations.rename_requested.connect(self._on_conversations_rename_requested)
        self.conversations.delete_requested.connect(self._on_conversations_delete_requested)

        heading = QLabel(self.title)
        heading.setObjectName("pageTitle")
        self.picker = ModelPicker()
        self.picker.picked.connect(self._on_picker_picked)
        self.model_state = QLabel()
        self.model_state.setObjectName("hint")
        self.compare_button = QPushButton("Compare")
        self.compare_button.setToolTip("Two models answer the same prompt side by side")
        self.compare_button.clicked.connect(self.open_compare)
        self.compare_window: CompareWindow | None = None
        self.settings_button = QPushButton("Settings")
        self.settings_button.setCheckable(True)
        self.settings_button.setToolTip("System prompt, temperature, top_p and max tokens")
        header = QHBoxLayout()
        header.addWidget(heading)
        header.addSpacing(16)
        header.addWidget(QLabel("Model:"))
        header.addWidget(self.picker)
        header.addWidget(self.model_state, 1)
        header.addWidget(self.compare_button)
        header.addWidget(self.settings_button)
        self.settings = ChatSettingsPanel()
        self.settings.hide()
        self.settings.changed.connect(self._on_settings_changed)
        self.settings_button.toggled.connect(self.settings.setVisible)

        self.transcript = Transcript()
        self.transcript.regenerate_requested.connect(self.regenerate)
        self.transcript.retry_requested.connect(self.regenerate)
        self.transcript.edit_requested.connect(self.edit_and_resend)
        self.message_label = QLabel()
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message_label.hide()
        self.input = ChatInput()
        self.input.submitted.connect(self.send)
        # Images for a vision model: attached, pasted or dropped on the input (ADR 45).
        self.attachments = ChatAttachments()
        self.input.image_files.connect(self.attachments.add_files)
        self.input.image_pixels.connect(self.attachments.add_pixels)
        self.attachments.changed.connect(self._check_images)
        # Another model may see where this one cannot (or the other way): said again.
        self.picker.currentTextChanged.connect(lambda _model: self._check_images())
        self.send_button = QPushButton("Send")
        self.send_button.setProperty("primary", True)  # the accent's colours (app.qss)
        self.send_button.clicked.connect(self.send)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the reply; what came so far is kept")
        self.stop_button.clicked.connect(self.stop)
        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.attachments.attach_button)
        buttons.addStretch(1)
        entry = QHBoxLayout()
        entry.addWidget(self.input, 1)
        entry.addLayout(buttons)

        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addLayout(header)
        right_layout.addWidget(self.settings)
        right_layout.addWidget(self.transcript, 1)
        right_layout.addWidget(self.message_label)
        right_layout.addWidget(self.attachments)
        right_layout.addLayout(entry)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self.conversations)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([230, 900])
        layout = QVBoxLayout(self)
        layout.addWidget(splitter)

        self.history = ChatHistoryActions(bridge, self, self)
        self.transcript.branch_requested.connect(self.history.switch_branch)

        self._active.changed.connect(self._on_active_model_changed)
        # Bound methods, not lambdas: Qt drops the connection when the widget goes, while
        # the bridge (and the feed's events) may outlive it.
        self._active.failed.connect(self.model_state.setText)
        bridge.when_connected(self._on_bridge_connected)
        bridge.state_changed.connect(self._update_actions)
        self._update_actions()

    # -- state ------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.reply is not None or self._sending is not None

    def _update_actions(self, *_: object) -> None:
        connected = self._bridge.state == ConnectionState.CONNECTED
        self.send_button.setEnabled(connected and not self.busy)
        self.stop_button.setEnabled(self.reply is not None and not self.reply.stopped)
        self.conversations.set_locked(self.busy)
        self.transcript.set_busy(self.busy)

    def _say(self, text: str) -> None:
        self.message_label.setText(text)
        self.message_label.setVisible(bool(text))

    def say(self, text: str) -> None:
        """A line under the transcript (what went wrong, what was done)."""
        self._say(text)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.refresh()

    def _on_bridge_connected(self) -> None:
        self.refresh()
        if self._wanted is not None:
            self.open_conversation(self._wanted)
        self._update_actions()

    # -- the list and the models ---------------------------------------------------------

    def refresh(self) -> None:
        """List the conversations and the models the gateway offers."""
        if self._bridge.state != ConnectionState.CONNECTED:
            return
        self._ops.run(self._calls.conversations(), self._on_listing_succeeded)
        self.history.load_presets()
        self._active.refresh()

    def _on_listing_succeeded(self, listed: ConversationList) -> None:
        self._listed = listed.conversations
        self.conversations.set_conversations(listed.conversations)
        self.conversations.select(self.conversation.id if self.conversation else None)

    def _on_active_model_changed(self) -> None:
        active = self._active.active
        # A new chat follows the active model when it changes (picked in the tray, started,
        # used); otherwise what is picked or typed here wins: an answer listed before a pick
        # must not undo it.
        follow = (
            self.conversation is None
            and not self.busy
            and bool(active)
            and active != self._followed
        )
        if not self.busy:
            self._followed = active
        current = (
            active
            if follow
            else self.picker.current_model()
            or (self.conversation.model if self.conversation else active)
        )
        self.picker.set_models(self._active.listed, current)
        if self.compare_window is not None:
            self.compare_window.set_models(self._active.listed)
        self.model_state.setText(self.picker.describe())

    def _on_picker_picked(self, model: str) -> None:
        self.model_state.setText(self.picker.describe())
        if model and (model in self.picker.models or not self._active.loaded):
            # One the gateway lists (or may: not listed yet): the active model everywhere.
            if model != self._active.active:
                self._active.choose(model)
            self._followed = model
        else:
            # A name typed here stays here, until the active model changes elsewhere.
            self._followed = self._active.active
        if self.conversation is not None and model and model != self.conversation.model:
            self._save(ConversationUpdate(model=model))

    def _on_settings_changed(self) -> None:
        if self.conversation is not None:
            system_prompt, params = self.settings.values()
            preset = self.settings.preset()
            self._save(
                ConversationUpdate(system_prompt=system_prompt, params=params, preset=preset)
            )

    def _save(self, update: ConversationUpdate) -> None:
        assert self.conversation is not None
        call = self._calls.update(self.conversation.id, update)
        self._ops.run(
            call, self._on_saved, on_failure=lambda failure: self._say(f"Not saved: {failure}")
        )

    def _on_saved(self, conversation: Conversation) -> None:
        if self.conversation is not None and conversation.id == self.conversation.id:
            # Keep the messages shown: an update answers with the whole conversation anyway.
            self.conversation = conversation

    def _list_first(self, conversation: ConversationSummary, reply: Message) -> None:
        """The conversation a reply was saved in, at the top of the list as the daemon
        would list it now: known from the turn, so the list is not asked for again."""
        moved = ConversationSummary(
            id=conversation.id,
            title=conversation.title,
            model=conversation.model,
            created_at=conversation.created_at,
            updated_at=reply.created_at,
            message_count=conversation.message_count + 1,
        )
        self._listed = [moved, *(c for c in self._listed if c.id != moved.id)]
        self.conversations.set_conversations(self._listed)
        self.conversations.select(moved.id)

    def open_compare(self) -> None:
        """The Compare window, the model picked here on its left, the input's text as its
        prompt and this chat's settings for both sides (widgets/chat_compare.py)."""
        if self.compare_window is None:
            self.compare_window = CompareWindow(self._bridge, self)
            self.compare_window.kept.connect(self._on_compare_kept)
        window = self.compare_window
        window.system_prompt, window.params = self.settings.values()
        window.set_models(self._active.listed, self.picker.current_model() or None)
        text = self.input.toPlainText().strip()
        if text and not window.busy:
            window.prompt.setPlainText(text)
        window.show()
        window.raise_()
        window.activateWindow()

    def _on_compare_kept(self, _conversation_ids: list[str]) -> None:
        self.refresh()  # the kept exchanges join the list

    # -- opening, renaming, deleting -----------------------------------------------------

    def new_chat(self) -> None:
        if self.busy:
            return
        self.conversation = None
        self._wanted = None
        self.transcript.clear()
        if self._active.active:
            self.picker.set_model(self._active.active)
            self.model_state.setText(self.picker.describe())
        self.conversations.select(None)
        self._say("")
        self.input.setFocus()

    def open_conversation(self, conversation_id: str) -> None:
        """Show a conversation and its messages (once connected, or the reply ended, if not)."""
        self._wanted = conversation_id
        if self.busy:
            self._say("It opens when this reply ends.")
            return
        if self._bridge.state != ConnectionState.CONNECTED:
            return
        call = self._calls.conversation(conversation_id)
        self._ops.run(
            call,
            self._show_conversation,
            on_failure=lambda failure: self._say(f"Not opened: {failure}"),
        )

    def show_conversation(self, conversation: Conversation) -> None:
        """Show this conversation as the daemon answered it (another branch, an import, a
        search hit), whichever was open; not while a reply streams."""
        if not self.busy:
            self._wanted = conversation.id
            self._show_conversation(conversation)
            self.conversations.set_title(conversation.id, conversation.title)

    def _show_conversation(self, conversation: Conversation) -> None:
        if self.busy or self._wanted != conversation.id:
            return  # another one was asked for since
        self._wanted = None
        self.conversation = conversation
        self.transcript.set_messages(conversation.messages)
        self.settings.set_values(
            conversation.system_prompt, conversation.params, conversation.preset
        )
        if conversation.model:
            self.picker.set_model(conversation.model)
            self.model_state.setText(self.picker.describe())
        self.conversations.select(conversation.id)
        self._say("")

    def _on_conversations_rename_requested(self, conversation_id: str, title: str) -> None:
        call = self._calls.update(conversation_id, ConversationUpdate(title=title))
        self._ops.run(
            call, self._on_renamed, on_failure=lambda failure: self._say(f"Not renamed: {failure}")
        )
        call.failed.connect(lambda _: self.refresh())

    def _on_renamed(self, conversation: Conversation) -> None:
        self.conversations.set_title(conversation.id, conversation.title)
        self._on_saved(conversation)

    def _on_conversations_delete_requested(self, conversation_id: str) -> None:
        title = dict(zip(self.conversations.ids(), self.conversations.titles(), strict=True))
        name = title.get(conversation_id, "this conversation")

        def delete() -> None:
            call = self._calls.delete(conversation_id)
            self._ops.run(
                call,
                lambda _: self._on_deleted(conversation_id),
                on_failure=lambda failure: self._say(f"Not deleted: {failure}"),
            )

        self.confirm_box = ask_to_confirm(
            self.window(),
            title="Delete a conversation",
            text=f"Delete “{name}”?",
            detail="Its messages are removed for good.",
            action="Delete",
            on_confirm=delete,
            on_closed=self._forget_confirm_box,
        )

    def _forget_confirm_box(self) -> None:
        self.confirm_box = None

    def _on_deleted(self, conversation_id: str) -> None:
        if self.conversation is not None and self.conversation.id == conversation_id:
            self.new_chat()
        self.refresh()

    # -- sending, replies ---------------------------------------------------------------

    def send(self) -> None:
        """Send what the input holds: a new conversation starts with it."""
        if self.busy or self._bridge.state != ConnectionState.CONNECTED:
            return
        if not self.picker.current_model():
            self._say(NO_MODEL)
            return
        images = self.attachments.images()
        if not self._check_images():
            return  # the model cannot read them: said beside the images, nothing sent
        text = self.input.take_text()
        if not text and not images:
            return
        if self.conversation is None:
            system_prompt, params = self.settings.values()
            new = NewConversation(
                model=self.picker.current_model(),
                system_prompt=system_prompt,
                preset=self.settings.preset(),
                params=params,
            )
            request = TurnRequest(new=new, content=text, images=images)
            self._begin(request, cut=None, restore=text)
        else:
            request = self._turn(content=text).model_copy(update={"images": images})
            self._begin(request, cut=None, restore=text)

    def regenerate(self, widget: MessageWidget) -> None:
        """Ask for the last reply again (Regenerate, or Retry after a failure)."""
        if self.busy or self.conversation is None:
            return
        if widget.message is None:
            # A failed reply that was never saved: nothing to cut in the store.
            self.transcript.remove_from(widget)
            self._begin(self._turn(), cut=None, restore=None)
            return
        self._begin(self._turn(cut_from=widget.message.id), cut=widget, restore=None)

    def edit_and_resend(self, widget: MessageWidget, text: str) -> None:
        if self.busy or self.conversation is None or widget.message is None:
            return
        request = self._turn(cut_from=widget.message.id, content=text)
        self._begin(request, cut=widget, restore=text)

    def stop(self) -> None:
        if self.reply is not None:
            self.reply.stop()
            self._update_actions()

    def _turn(self, *, cut_from: int | None = None, content: str | None = None) -> TurnRequest:
        """A turn of the open conversation with the model and settings shown (the daemon
        keeps them on the conversation)."""
        assert self.conversation is not None
        system_prompt, params = self.settings.values()
        return TurnRequest(
            conversation_id=self.conversation.id,
            cut_from=cut_from,
            content=content,
            model=self.picker.current_model() or None,
            system_prompt=system_prompt,
            preset=self.settings.preset(),
            params=params,
        )

    def _begin(
        self, request: TurnRequest, *, cut: MessageWidget | None, restore: str | None
    ) -> None:
        self._say("")
        self.settings.taken()
        stream = ReplyStream(self._calls, self.transcript, self.picker.current_model(), request)
        self._sending = stream

        def started(turn: TurnStarted) -> None:
            self._sending, self.reply = None, stream
            if request.images:
                self.attachments.clear()  # sent: kept with the message now
            first = self.conversation is None
            conversation = turn.conversation
            if conversation is not None:
                self.conversation = conversation
            if cut is not None and conversation is not None:
                # The path as it is now: up to the message's parent (a regenerate) or the
                # new version (an edit), each message with its versions for the switcher.
                self.transcript.set_messages(conversation.messages)
                self._update_actions()
                return
            if cut is not None:
                self.transcript.remove_from(cut)
            last: Message | None = None
            if conversation is not None and conversation.messages:
                last = conversation.messages[-1]
            if last is not None and last.role == Role.USER and restore is not None:
                self.transcript.add_message(last)
            if first and conversation is not None:
                # Listed at once; moved on with its reply when that is saved.
                self._listed = [conversation, *self._listed]
                self.conversations.set_conversations(self._listed)
                self.conversations.select(conversation.id)
            self._update_actions()

        def refused(failure: Failure) -> None:
            self._sending = None
            self._say(f"Not sent: {failure}")
            if restore is not None and not self.input.toPlainText().strip():
                self.input.setPlainText(restore)  # the user's words are not lost
            self._update_actions()

        stream.started.connect(started)
        stream.refused.connect(refused)
        stream.finished.connect(self._on_reply_finished)
        self._update_actions()

    def _check_images(self) -> bool:
        """Whether the attached images may go to the chat's model (ADR 45)."""
        return self.attachments.check_model(self._bridge.instances, self.picker.current_model())

    def _on_reply_finished(self, message: Message | None) -> None:
        self.reply = None
        self._update_actions()
        if message is not None and self.conversation is not None:
            self._list_first(self.conversation, message)
        else:
            self.refresh()  # what the daemon kept of a turn that was not saved whole
        wanted = self._wanted
        if wanted is not None and (self.conversation is None or wanted != self.conversation.id):
            self.open_conversation(wanted)
