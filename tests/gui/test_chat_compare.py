"""Compare on the Chat page against a real daemon and two real llama-server instances of the
tiny model (served under two names): both replies stream at once into two columns, each with
its engine, TTFT and tok/s; nothing is kept in the history; the words for a bad choice."""

from __future__ import annotations

from pathlib import Path

import qasync
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import StartRequest
from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.chat_page import ChatPage
from roundhouse.gui.widgets.chat_compare import NOTHING, TWO_MODELS, CompareWindow
from tests.daemon_process import DaemonProcess, start_ready
from tests.gui.conftest import wait_until

READY_S = 60.0
NAMES = ("tiny-left", "tiny-right")


async def _serve_two(daemon: DaemonProcess, model: Path) -> None:
    """Two instances of the tiny model, one engine thread each (two engines on two cores),
    end-of-text ignored so each reply runs to its token limit."""
    for name in NAMES:
        options = InstanceOptions(
            model=str(model),
            ctx_size=512,
            parallel=1,
            threads=1,
            served_name=name,
            extra_args=("--ignore-eos",),
        )
        await start_ready(daemon, StartRequest(engine=EngineId.LLAMA_CPP, options=options), READY_S)


def _running(window: CompareWindow) -> bool:
    return window.busy  # a call, so the type checker does not pin it after an assert


def test_two_models_answer_the_same_prompt_side_by_side(
    qapp: QApplication,
    ui: Ui,
    qloop: qasync.QEventLoop,
    llama_daemon: DaemonProcess,
    tiny_gguf: Path,
) -> None:
    async def scenario() -> None:
        await _serve_two(llama_daemon, tiny_gguf)
        page = ui.window.show_page("Chat")
        assert isinstance(page, ChatPage)
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        await wait_until(lambda: page.picker.findText(NAMES[1]) >= 0, 20, "the models")
        page.picker.set_model(NAMES[0])
        page.settings.max_tokens.setValue(48)
        page.input.setPlainText("Tell me about trains")
        page.compare_button.click()
        window = page.compare_window
        assert window is not None and window.isVisible()
        left, right = window.columns
        assert left.picker.current_model() == NAMES[0], "the Chat page's model on the left"
        assert right.picker.current_model() == NAMES[1], "another served model on the right"
        assert window.prompt.toPlainText() == "Tell me about trains"

        # The same model twice, or no prompt: said in words, nothing sent.
        right.picker.set_model(NAMES[0])
        window.compare_button.click()
        assert window.message_label.text() == TWO_MODELS and not _running(window)
        right.picker.set_model(NAMES[1])
        window.prompt.setPlainText("   ")
        window.compare_button.click()
        assert window.message_label.text() == NOTHING and not _running(window)

        window.prompt.setPlainText("Tell me about trains")
        QTest.keyClick(window.prompt, Qt.Key.Key_Return)
        assert window.busy and not window.message_label.isVisible()
        assert window.stop_button.isEnabled() and not window.compare_button.isEnabled()
        assert not left.picker.isEnabled(), "the models stay as they were asked"
        await wait_until(lambda: not window.busy, 90, "both replies to end")
        for column, name in zip(window.columns, NAMES, strict=True):
            stats = column.stats
            assert stats is not None and column.error is None, column.error
            assert stats.model == name and stats.engine == "llama.cpp"
            assert stats.completion_tokens == 48, "the Chat page's max tokens, on both sides"
            assert stats.ttft_ms is not None and stats.ttft_ms > 0
            assert stats.tokens_per_s is not None and stats.tokens_per_s > 0
            shown = column.stats_label.text()
            assert shown.startswith("llama.cpp · TTFT ") and "tok/s" in shown, shown
            assert column.body.markdown.strip(), "the reply is shown"
            assert column.body.isVisible()
        assert left.started_at is not None and right.started_at is not None
        assert left.ended_at is not None and right.ended_at is not None
        assert max(left.started_at, right.started_at) < min(left.ended_at, right.ended_at), (
            "both replies ran at once"
        )
        assert window.compare_button.isEnabled() and not window.stop_button.isEnabled()
        async with DaemonClient(llama_daemon.url, llama_daemon.token) as client:
            assert (await client.chats()).conversations == [], "a compare keeps nothing"

        # Unless asked: each exchange becomes a conversation, named with its model, listed.
        assert window.keep_button.isEnabled()
        window.keep_button.click()
        await wait_until(lambda: "Kept in the history" in window.kept_label.text(), 20, "kept")
        assert not window.keep_button.isEnabled(), "kept once"
        async with DaemonClient(llama_daemon.url, llama_daemon.token) as client:
            listed = (await client.chats()).conversations
            assert sorted(c.title for c in listed) == [
                "Tell me about trains (tiny-left)",
                "Tell me about trains (tiny-right)",
            ]
            for summary in listed:
                kept = await client.chat(summary.id)
                question, answer = kept.messages[:2]
                assert question.content == "Tell me about trains"
                column = window.columns[NAMES.index(summary.model or "")]
                assert answer.content == column.body.markdown
                assert answer.stats is not None and answer.stats.tokens_per_s == (
                    column.stats.tokens_per_s if column.stats else None
                )
        await wait_until(lambda: len(page.conversations.ids()) == 2, 10, "the list")

        # Stop ends both sides, each marked stopped (here before the replies began: the
        # tiny model answers a whole reply in a tenth of a second on this machine).
        window.run()
        assert window.stop_button.isEnabled()
        window.stop_button.click()
        await wait_until(lambda: not window.busy, 30, "both replies to stop")
        for column in window.columns:
            assert column.stats is not None and column.stats.stopped, column.stats
            assert column.state.text() == "Stopped" and "stopped" in column.stats_label.text()
        window.close()

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
