"""The Chat page against a real daemon and the real llama-server: a reply streams in and is
kept, stop, regenerate and edit and resend (new versions shown), an error with Retry,
delete; the conversation is found again by a fresh app. Then the widgets alone: Markdown
and code, the folded reasoning, the coalesced repaints, the input's keys."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import qasync
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontInfo, QGuiApplication
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox

from roundhouse.api.chat import Conversation, Role
from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import StartRequest
from roundhouse.base.paths import resolve_home
from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui, build_ui
from roundhouse.gui.chat_reply import ReplyDraft
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.chat_page import ChatPage
from roundhouse.gui.widgets.chat_input import ChatInput
from roundhouse.gui.widgets.chat_markdown import CodeBlock, MarkdownView
from roundhouse.gui.widgets.chat_message import THINKING, MessageWidget
from roundhouse.gui.widgets.chat_settings import NOT_AVAILABLE
from roundhouse.gui.widgets.chat_transcript import RENDER_MS, Transcript
from tests.daemon_process import DaemonProcess, start_ready
from tests.gui.conftest import wait_until

READY_S = 60.0
REPLY_S = 60.0


def _run(uis: list[Ui], qloop: qasync.QEventLoop, scenario: Coroutine[Any, Any, None]) -> None:
    """Run the scenario, then end each bridge's tasks while the loop still runs them."""
    try:
        qloop.run_until_complete(scenario)
    finally:
        for ui in uis:
            qloop.run_until_complete(ui.bridge.aclose())


async def _serve(daemon: DaemonProcess, model: Path) -> str:
    """Start llama-server on the tiny model (its own 2048-token context); the gateway's id.

    One engine thread: on its default of a spinning thread per core the engine starves the
    app's event loop on a 2-core machine, and a whole reply then lands between two repaints.
    End-of-text ignored: with random weights the model may sample it early, and the streaming
    and stop tests need a reply that runs to its max_tokens (or the context)."""
    options = InstanceOptions(
        model=str(model), ctx_size=2048, parallel=1, threads=1, extra_args=("--ignore-eos",)
    )
    request = StartRequest(engine=EngineId.LLAMA_CPP, options=options)
    await start_ready(daemon, request, READY_S)
    # The gateway lists a model started on a file by the file's stem, never its path.
    return model.stem


async def _stored(daemon: DaemonProcess, conversation_id: str) -> Conversation:
    async with DaemonClient(daemon.url, daemon.token) as client:
        return await client.chat(conversation_id)


async def _page(ui: Ui, model: str) -> ChatPage:
    page = ui.window.show_page("Chat")
    assert isinstance(page, ChatPage)
    ui.bridge.start()
    await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
    await wait_until(lambda: page.picker.findText(model) >= 0, 20, "the model in the picker")
    page.picker.setCurrentIndex(page.picker.findText(model))
    return page


async def _reply_done(page: ChatPage) -> MessageWidget:
    await wait_until(lambda: page.reply is None and not page.busy, REPLY_S, "the reply to end")
    return page.transcript.messages[-1]


async def _new_reply(page: ChatPage, previous: MessageWidget | None) -> MessageWidget:
    """The reply after `previous`, once saved: a short one may begin and end between polls."""

    def answered() -> bool:
        last = page.transcript.messages[-1] if page.transcript.messages else None
        new = last is not None and last is not previous and last.role == Role.ASSISTANT
        return new and not page.busy and last is not None and last.message is not None

    await wait_until(answered, REPLY_S, f"a new reply ({page.message_label.text()})")
    return page.transcript.messages[-1]


def _send(page: ChatPage, text: str) -> None:
    page.input.setPlainText(text)
    QTest.keyClick(page.input, Qt.Key.Key_Return)


def test_a_reply_streams_in_is_regenerated_edited_and_found_by_a_fresh_app(
    qapp: QApplication,
    ui: Ui,
    qloop: qasync.QEventLoop,
    llama_daemon: DaemonProcess,
    tiny_gguf: Path,
) -> None:
    uis = [ui]

    async def scenario() -> None:
        model = await _serve(llama_daemon, tiny_gguf)
        page = await _page(ui, model)
        assert page.send_button.isEnabled() and not page.stop_button.isEnabled()
        page.settings_button.click()
        assert page.settings.isVisible()
        page.settings.system_prompt.setPlainText("You are terse.")
        page.settings.max_tokens.setValue(1200)
        page.settings.temperature.setValue(0.7)

        # Shift+Enter is a new line, not a send.
        QTest.keyClicks(page.input, "Tell me about trains")
        QTest.keyClick(page.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
        assert page.input.toPlainText() == "Tell me about trains\n" and page.reply is None
        QTest.keyClick(page.input, Qt.Key.Key_Return)
        assert page.input.toPlainText() == "", "Enter took the text"
        await wait_until(lambda: page.reply is not None, 20, "the reply to begin")
        assert page.stop_button.isEnabled() and not page.send_button.isEnabled()
        assert not page.conversations.list.isEnabled(), "the open conversation stays open"

        # The streaming message grows at the repaint timer's pace, not per token.
        streaming = page.transcript.streaming
        assert streaming is not None
        seen: list[int] = []
        while page.reply is not None:
            length = len(streaming.body.markdown)
            if not seen or length != seen[-1]:
                seen.append(length)
            await asyncio.sleep(0.005)
        assert len(seen) >= 4 and seen == sorted(seen), seen
        reply = await _reply_done(page)
        assert reply is streaming and reply.message is not None
        assert reply.message.content == reply.body.markdown and reply.body.markdown
        stats = reply.message.stats
        assert stats is not None and stats.engine == "llama.cpp" and not stats.stopped
        assert stats.completion_tokens and stats.ttft_ms is not None
        assert stats.completion_tokens > page.transcript.renders / 2, "coalesced repaints"
        line = reply.stats_label.text()
        assert line.startswith("llama.cpp · TTFT ") and " tokens · " in line and "tok/s" in line
        assert page.send_button.isEnabled() and not page.stop_button.isEnabled()

        conversation = page.conversation
        assert conversation is not None
        await wait_until(lambda: page.conversations.ids() == [conversation.id], 10, "listed")
        assert page.conversations.titles() == ["Tell me about trains"]
        assert page.conversations.current_id() == conversation.id
        stored = await _stored(llama_daemon, conversation.id)
        assert [m.role for m in stored.messages] == [Role.USER, Role.ASSISTANT]
        assert stored.system_prompt == "You are terse." and stored.model == model
        assert stored.params.max_tokens == 1200 and stored.params.temperature == 0.7

        # Regenerate the last reply: a new version shown, in the store too (the old one is
        # kept beside it: tests/gui/test_chat_history_gui.py switches between them).
        assert reply.regenerate_button.isVisible() and reply.regenerate_button.isEnabled()
        first_id = reply.message.id
        reply.regenerate_button.click()
        regenerated = await _new_reply(page, reply)
        assert regenerated is not reply and regenerated.message is not None
        assert regenerated.message.id != first_id
        assert len(page.transcript.messages) == 2
        stored = await _stored(llama_daemon, conversation.id)
        assert [m.id for m in stored.messages][-1] == regenerated.message.id

        # Edit the question in place and send it again: the path shown is the new version.
        question = page.transcript.messages[0]
        assert question.edit_button.isVisible()
        question.edit_button.click()
        assert question.editor is not None
        question.editor.setPlainText("Tell me about engines")
        question.submit_edit()
        edited = await _new_reply(page, regenerated)
        assert [w.content for w in page.transcript.messages[:1]] == ["Tell me about engines"]
        assert len(page.transcript.messages) == 2 and edited.message is not None
        stored = await _stored(llama_daemon, conversation.id)
        assert [m.content for m in stored.messages] == [
            "Tell me about engines",
            edited.message.content,
        ]

        # Rename in place.
        page.conversations.list.item(0).setText("  Engines ")
        await wait_until(
            lambda: page.conversation is not None and page.conversation.title == "Engines",
            10,
            "the new title saved",
        )
        assert page.conversations.titles() == ["Engines"]
        assert (await _stored(llama_daemon, conversation.id)).title == "Engines"

        # A fresh app against the same daemon finds it with its messages.
        ui.window.close()
        await ui.bridge.aclose()
        fresh = build_ui(
            qapp, resolve_home(llama_daemon.home.root), auto_start=False, tray_available=False
        )
        uis.append(fresh)
        fresh.window.show()
        page2 = await _page(fresh, model)
        await wait_until(lambda: page2.conversations.ids() == [conversation.id], 10, "the list")
        assert page2.conversations.titles() == ["Engines"]
        fresh.window.show_chat(conversation.id)
        await wait_until(lambda: len(page2.transcript.messages) == 2, 10, "the messages")
        shown = page2.transcript.messages
        assert shown[0].content == "Tell me about engines"
        assert shown[1].content == edited.message.content
        assert "tokens" in shown[1].stats_label.text()
        assert page2.settings.system_prompt.toPlainText() == "You are terse."
        assert page2.settings.max_tokens.value() == 1200
        assert page2.picker.current_model() == model
        fresh.window.deleteLater()

    _run(uis, qloop, scenario())


def test_stop_keeps_the_reply_marked_stopped_and_the_daemon_serves_on(
    ui: Ui, qloop: qasync.QEventLoop, llama_daemon: DaemonProcess, tiny_gguf: Path
) -> None:
    async def scenario() -> None:
        model = await _serve(llama_daemon, tiny_gguf)
        page = await _page(ui, model)
        page.settings.max_tokens.setValue(100_000)  # the model's context ends it, seconds on
        _send(page, "Count to a thousand")
        await wait_until(lambda: page.reply is not None, 20, "the reply to begin")
        streaming = page.transcript.streaming
        assert streaming is not None
        await wait_until(lambda: len(streaming.body.markdown) > 20, 20, "some text")
        page.stop_button.click()
        assert not page.stop_button.isEnabled()
        stopped = await _reply_done(page)
        assert stopped is streaming and stopped.message is not None
        stats = stopped.message.stats
        assert stats is not None and stats.stopped and stats.error is None
        assert stats.completion_tokens is not None and 0 < stats.completion_tokens < 2000
        assert stopped.stats_label.text().endswith("· stopped")
        assert stopped.message.content == stopped.body.markdown
        assert page.send_button.isEnabled() and not page.stop_button.isEnabled()
        assert page.input.isEnabled()
        assert page.conversation is not None
        stored = await _stored(llama_daemon, page.conversation.id)
        assert stored.messages[-1].stats is not None and stored.messages[-1].stats.stopped

        # The daemon and the engine serve on: the next message gets its whole reply.
        page.settings.max_tokens.setValue(16)
        _send(page, "And now briefly")
        after = await _new_reply(page, stopped)
        assert after.message is not None and after.message.stats is not None
        assert not after.message.stats.stopped and after.message.stats.error is None
        assert len(page.transcript.messages) == 4

    _run([ui], qloop, scenario())


def test_an_unknown_model_fails_inline_retry_answers_and_delete_asks_first(
    ui: Ui, qloop: qasync.QEventLoop, llama_daemon: DaemonProcess, tiny_gguf: Path
) -> None:
    async def scenario() -> None:
        model = await _serve(llama_daemon, tiny_gguf)
        page = await _page(ui, model)
        page.picker.set_model("no-such-model")
        assert page.picker.describe() == NOT_AVAILABLE
        page.settings.max_tokens.setValue(24)
        _send(page, "Hello?")
        failed = await _new_reply(page, None)
        assert failed.error_row.isVisible() and failed.retry_button.isEnabled()
        assert "no-such-model" in failed.error_label.text()
        assert not failed.regenerate_button.isVisible()
        assert failed.message is not None and failed.message.stats is not None
        assert failed.message.stats.error
        assert page.send_button.isEnabled()

        # Choose the served model (saved on the conversation), then Retry.
        page.picker.setCurrentIndex(page.picker.findText(model))
        page.picker.activated.emit(page.picker.currentIndex())
        assert page.conversation is not None
        conversation_id = page.conversation.id
        await wait_until(lambda: page.conversation is not None and page.conversation.model == model)
        failed.retry_button.click()
        answered = await _new_reply(page, failed)
        assert answered is not failed and not answered.error_row.isVisible()
        assert [w.role for w in page.transcript.messages] == [Role.USER, Role.ASSISTANT]
        stored = await _stored(llama_daemon, conversation_id)
        assert len(stored.messages) == 2 and stored.messages[1].stats is not None
        assert stored.messages[1].stats.error is None and stored.model == model

        # Delete asks first; Cancel keeps it, Delete removes it and empties the page.
        await wait_until(lambda: page.conversations.ids() == [conversation_id], 10, "listed")
        page.conversations.select(conversation_id)
        page.conversations.delete_button.click()
        box = page.confirm_box
        assert box is not None and box.isVisible()
        box.button(QMessageBox.StandardButton.Cancel).click()
        await wait_until(lambda: page.confirm_box is None, 5, "the box to close")
        assert page.conversations.ids() == [conversation_id]
        page.conversations.delete_button.click()
        box = page.confirm_box
        assert box is not None
        delete = next(b for b in box.buttons() if b.text() == "Delete")
        delete.click()
        await wait_until(lambda: page.conversations.ids() == [], 10, "the deletion")
        assert page.conversation is None and page.transcript.messages == []

    _run([ui], qloop, scenario())


# -- the widgets alone --------------------------------------------------------------------


def test_code_blocks_are_monospace_with_a_copy_button(qapp: QApplication) -> None:
    view = MarkdownView()
    view.set_markdown("Run this:\n\n```bash\necho hi\nls -l\n```\n\nThen **done**.")
    kinds = [type(b).__name__ for b in view.blocks]
    assert kinds == ["TextBlock", "CodeBlock", "TextBlock"]
    code = view.code_blocks()[0]
    assert code.language_label.text() == "bash" and code.view.isReadOnly()
    assert QFontInfo(code.view.font()).fixedPitch()
    assert code.view.toPlainText() == "echo hi\nls -l"
    code.copy_button.click()
    assert QGuiApplication.clipboard().text() == "echo hi\nls -l"
    assert code.copy_button.text() == "Copied"
    view.deleteLater()


def test_streaming_markdown_touches_only_the_last_block(qapp: QApplication) -> None:
    view = MarkdownView()
    text = "Intro paragraph.\n\n```py\nx = 1\n"
    view.set_markdown(text, final=False)
    first, code = view.blocks
    assert isinstance(code, CodeBlock)
    text += "y = 2\n"
    view.set_markdown(text, final=False)
    assert view.blocks == [first, code], "the same widgets, updated in place"
    assert code.view.toPlainText() == "x = 1\ny = 2"
    text += "```\nAfter."
    view.set_markdown(text, final=True)
    assert view.blocks[:2] == [first, code] and len(view.blocks) == 3
    view.set_markdown("Something else entirely")
    assert len(view.blocks) == 1
    view.deleteLater()


def test_reasoning_is_folded_until_opened(qapp: QApplication) -> None:
    message = MessageWidget(Role.ASSISTANT)
    message.show()
    message.show_partial("The answer", "Let me think about it")
    fold = message.reasoning
    assert fold.isVisible() and fold.toggle.text() == THINKING and not fold.expanded
    assert not fold.body.isVisible() and fold.body.text() == "", "folded text is not laid out"
    fold.toggle.click()
    assert fold.body.isVisible() and fold.body.text() == "Let me think about it"
    message.show_partial("The answer, longer", "Let me think about it more")
    assert fold.body.text() == "Let me think about it more"
    message.deleteLater()


def test_deltas_are_coalesced_into_timed_repaints(
    qapp: QApplication, qloop: qasync.QEventLoop
) -> None:
    transcript = Transcript()
    transcript.resize(600, 400)
    transcript.show()
    draft = ReplyDraft("m")
    widget = transcript.stream(draft)

    async def scenario() -> None:
        for i in range(2000):
            draft.add(f"token{i} ")
            transcript.changed()
        assert transcript.renders == 0, "nothing is rendered per delta"
        await asyncio.sleep(RENDER_MS / 1000 * 3)
        assert transcript.renders == 1
        assert widget.body.markdown == draft.content
        transcript.verticalScrollBar().setValue(0)
        assert not transcript.follows_bottom, "the user scrolled up: the view stays"

    qloop.run_until_complete(scenario())
    transcript.end_stream()
    transcript.deleteLater()


def test_enter_sends_and_shift_enter_breaks_the_line(qapp: QApplication) -> None:
    box = ChatInput()
    sent: list[str] = []
    box.submitted.connect(lambda: sent.append(box.take_text()))
    QTest.keyClicks(box, "one")
    QTest.keyClick(box, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClicks(box, "two")
    assert sent == [] and box.toPlainText() == "one\ntwo"
    QTest.keyClick(box, Qt.Key.Key_Enter)
    assert sent == ["one\ntwo"] and box.toPlainText() == ""
    box.deleteLater()
