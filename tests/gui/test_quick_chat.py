"""Quick chat from the tray action, against a real daemon and the real llama-server: the
window opens above the others bound to the active model, a reply streams in (repainted on a
timer, not per token), Stop stops one, Esc hides it, Open in chat moves the exchange."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import qasync
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from roundhouse.api.chat import Role, SamplingParams
from roundhouse.client import DaemonClient
from roundhouse.client.chat_stream import ChatDelta
from roundhouse.gui.app import Ui
from roundhouse.gui.pages.chat_page import ChatPage
from roundhouse.gui.quick_chat_window import CHOOSE_FIRST, QuickChatWindow
from roundhouse.gui.widgets.active_model_line import NO_MODEL_TEXT
from roundhouse.gui.widgets.reply_scroll import REPAINT_MS
from tests.gui.conftest import wait_until
from tests.gui.serving import action, connect, run, serving_daemon, start_tiny, tray_ui


def _open_from_tray(ui: Ui) -> QuickChatWindow:
    assert ui.tray is not None and ui.quick_chat is not None
    ui.tray.menu.aboutToShow.emit()
    action(ui.tray.menu, "Quick chat…").trigger()
    window = ui.quick_chat.window
    assert window is not None
    return window


async def _ask(qtbot: QtBot, window: QuickChatWindow, prompt: str) -> None:
    qtbot.keyClicks(window.input, prompt)
    qtbot.keyClick(window.input, Qt.Key.Key_Return)
    assert window.streaming and window.stop_button.isVisible()
    assert not window.open_button.isEnabled(), "nothing moves while a reply streams"


def test_quick_chat_from_the_tray_action(
    qapp: QApplication,
    qloop: qasync.QEventLoop,
    qtbot: QtBot,
    home_root: Path,
    tmp_path: Path,
    llama_server_binary: Path,
    tiny_gguf: Path,
) -> None:
    ui = tray_ui(qapp, home_root)

    async def scenario() -> None:
        await connect(ui)
        window = _open_from_tray(ui)
        assert window.isVisible() and not ui.window.isVisible()
        flags = window.windowFlags()
        assert flags & Qt.WindowType.WindowStaysOnTopHint
        assert flags & Qt.WindowType.Tool == Qt.WindowType.Tool
        # No model is active yet: the window says how to choose one.
        await wait_until(lambda: window.model_line.label.text() == NO_MODEL_TEXT, 10, "no model")

        info = await start_tiny(ui, tiny_gguf)
        active_model = ui.active_model
        assert active_model is not None

        def served_here() -> str | None:
            # Other programs' engines on this machine may be listed too: ours by its instance.
            return next((m.id for m in active_model.models if m.instance == info.id), None)

        active_model.refresh()
        await wait_until(lambda: served_here() is not None, 10, "the model in the list")
        model_id = served_here()
        window.model_line.menu.aboutToShow.emit()
        pick = action(window.model_line.menu, f"{model_id} — llama.cpp")
        pick.trigger()
        await wait_until(lambda: window.model == model_id, 10, "the model picked")
        serving = f"Model: {model_id} — llama.cpp, serving"
        # The window lists again as the instance changes: "loading" gives way to "serving".
        await wait_until(lambda: window.model_line.label.text() == serving, 10, "serving")

        # Esc hides it; the tray action brings it back with the model still bound.
        qtbot.keyClick(window.input, Qt.Key.Key_Escape)
        assert not window.isVisible()
        assert _open_from_tray(ui) is window and window.isVisible()

        # A reply streams in; the view is repainted on a timer, not once per piece.
        window.params = SamplingParams(max_tokens=24, temperature=0)
        pieces: list[float] = []
        renders_before = window.reply.renders
        began = time.monotonic()
        await _ask(qtbot, window, "Say hello")
        follow = window.follow
        assert follow is not None
        follow.received.connect(
            lambda e: pieces.append(time.monotonic()) if isinstance(e, ChatDelta) else None
        )
        await wait_until(lambda: not window.streaming, 60, "the reply")
        took_ms = (time.monotonic() - began) * 1000
        turn = window.exchange.turns[0]
        assert turn.error == "" and turn.reply, window.status_label.text()
        assert turn.stats is not None and not turn.stats.stopped
        assert "tokens" in window.status_label.text()
        assert pieces, "the reply came in pieces"
        # One paint as the question goes out, one at the end, the rest at most every 100 ms.
        paints = window.reply.renders - renders_before
        assert paints <= 2 + took_ms / REPAINT_MS + 1, (paints, len(pieces))
        shown = window.reply.shown_text()
        assert shown.startswith("**You:** Say hello") and turn.reply.strip() in shown

        # Stop, while the reply is on its way (the tiny model writes too fast to catch it
        # mid-stream: the request has gone out, nothing has come back yet).
        window.params = SamplingParams(max_tokens=400, temperature=0)
        await _ask(qtbot, window, "Count to one hundred")
        await asyncio.sleep(0)
        window.stop_button.click()
        await wait_until(lambda: not window.streaming, 10, "the stop")
        stopped = window.exchange.turns[1]
        assert stopped.stats is not None and stopped.stats.stopped
        assert window.status_label.text() == "Stopped."
        assert window.open_button.isEnabled() and window.new_button.isEnabled()

        # Open in chat: a conversation holding the exchange, the chat page shown.
        asked = [(t.prompt, t.reply) for t in window.exchange.turns]
        window.open_button.click()
        await wait_until(lambda: window.conversation is not None, 10, "the conversation")
        conversation = window.conversation
        assert conversation is not None
        assert not window.isVisible() and window.exchange.empty
        assert ui.window.isVisible()
        async with DaemonClient.for_home(ui.bridge.home) as client:
            saved = await client.chat(conversation.id)
        assert saved.model == model_id
        assert [(m.role, m.content) for m in saved.messages] == [
            (Role.USER, asked[0][0]),
            (Role.ASSISTANT, asked[0][1]),
            (Role.USER, asked[1][0]),
            (Role.ASSISTANT, asked[1][1]),
        ]
        assert saved.messages[3].stats is not None and saved.messages[3].stats.stopped
        page = ui.window.pages.currentWidget()
        assert isinstance(page, ChatPage) and ui.window.navigation.currentItem().text() == "Chat"

        def opened() -> bool:
            return page.conversation is not None and page.conversation.id == conversation.id

        await wait_until(opened, 10, "the chat page to open the conversation")

    with serving_daemon(llama_server_binary, home_root, tmp_path / "xdg"):
        run(ui, qloop, scenario())
    ui.window.deleteLater()


def test_the_shortcut_toggles_it_within_the_app(
    qapp: QApplication, qloop: qasync.QEventLoop, home_root: Path
) -> None:
    ui = tray_ui(qapp, home_root)
    quick = ui.quick_chat
    assert quick is not None and quick.window is None, "built on first use"
    assert quick.shortcut.key().toString() == "Ctrl+Shift+Space"
    assert quick.shortcut.context() == Qt.ShortcutContext.ApplicationShortcut
    quick.shortcut.activated.emit()
    window = quick.window
    assert window is not None and window.isVisible()
    quick.shortcut.activated.emit()
    assert not window.isVisible()
    # Closing it only hides it: the app and its exchange live on.
    quick.open()
    window.close()
    assert not window.isVisible() and quick.window is window
    run(ui, qloop, _nothing())
    ui.window.deleteLater()


async def _nothing() -> None:
    return None


async def _set_active_model(ui: Ui, model: str | None) -> None:
    async with DaemonClient.for_home(ui.bridge.home) as client:
        current = await client.settings()
        chat = current.chat.model_copy(update={"active_model": model})
        await client.put_settings(current.model_copy(update={"chat": chat}))


def _checked_in_tray(ui: Ui) -> list[str]:
    assert ui.tray is not None
    ui.tray.menu.aboutToShow.emit()
    return [a.data() for a in ui.tray.models_menu.actions() if a.isChecked()]


def test_it_opens_on_the_only_running_model_and_its_hints_clear(
    qapp: QApplication,
    qloop: qasync.QEventLoop,
    qtbot: QtBot,
    home_root: Path,
    tmp_path: Path,
    llama_server_binary: Path,
    tiny_gguf: Path,
) -> None:
    """The active model is one thing: with none chosen, the one model running is active in
    quick chat and the tray; the hints go as soon as a model starts or is picked."""
    ui = tray_ui(qapp, home_root)
    other_gguf = tmp_path / "other.gguf"
    other_gguf.hardlink_to(tiny_gguf)

    async def scenario() -> None:
        await connect(ui)
        assert ui.quick_chat is not None and ui.active_model is not None
        active_model = ui.active_model
        window = ui.quick_chat.open()
        await wait_until(lambda: window.model_line.label.text() == NO_MODEL_TEXT, 10, "no model")
        qtbot.keyClicks(window.input, "Say hello")
        qtbot.keyClick(window.input, Qt.Key.Key_Return)
        assert window.status_label.text() == CHOOSE_FIRST and not window.streaming

        # A model starts (here through the daemon, as the Engines page does): the window,
        # still open, is bound to it and the hint goes, without reopening.
        info = await start_tiny(ui, tiny_gguf)
        await wait_until(lambda: window.model is not None, 15, "the started model active")
        model_id = window.model
        assert model_id == tiny_gguf.stem
        assert window.status_label.text() == ""
        serving = f"Model: {model_id} — llama.cpp, serving"
        await wait_until(lambda: window.model_line.label.text() == serving, 10, "serving")

        # Nothing chosen, one model running: it is the active one all the same, in quick
        # chat, the tray and the daemon's answer (what `roundhouse chat` uses).
        await _set_active_model(ui, None)
        window.hide()
        active_model.active = None
        window = ui.quick_chat.open()
        await wait_until(lambda: window.model == model_id, 10, "the only running model")
        assert window.model_line.label.text() == f"Model: {model_id} — llama.cpp, serving"
        assert _checked_in_tray(ui) == [model_id]
        async with DaemonClient.for_home(ui.bridge.home) as client:
            assert (await client.gateway_models()).active_model == model_id
            assert (await client.settings()).chat.active_model is None

        # Enter sends to it (the prompt typed before is still in the input).
        window.params = SamplingParams(max_tokens=8, temperature=0)
        qtbot.keyClick(window.input, Qt.Key.Key_Return)
        assert window.streaming
        await wait_until(lambda: not window.streaming, 60, "the reply")
        turn = window.exchange.turns[-1]
        assert turn.prompt == "Say hello" and turn.error == "", window.status_label.text()
        assert turn.stats is not None and turn.stats.instance in (None, info.id)
        assert "tokens" in window.status_label.text()

        # Two models running, none chosen: none is active, and Enter says to choose one;
        # picking one in Model ▾ clears that hint at once.
        other = await start_tiny(ui, other_gguf)
        await _set_active_model(ui, None)
        window.hide()
        window = ui.quick_chat.open()
        await wait_until(lambda: window.model_line.label.text() == NO_MODEL_TEXT, 10, "none")
        qtbot.keyClicks(window.input, "Hi")
        qtbot.keyClick(window.input, Qt.Key.Key_Return)
        assert window.status_label.text() == CHOOSE_FIRST and not window.streaming

        def listed_for(instance: str) -> str | None:
            return next((m.id for m in active_model.models if m.instance == instance), None)

        await wait_until(lambda: listed_for(other.id) is not None, 10, "the second model")
        picked = listed_for(other.id)
        window.model_line.menu.aboutToShow.emit()
        action(window.model_line.menu, f"{picked} — llama.cpp").trigger()
        await wait_until(lambda: window.model == picked, 10, "the pick")
        assert window.status_label.text() == ""
        assert _checked_in_tray(ui) == [picked]
        async with DaemonClient.for_home(ui.bridge.home) as client:
            assert (await client.gateway_models()).active_model == picked

        # The chat page opens a new chat on it; a model picked there is the active one in
        # quick chat and the tray too.
        page = ui.window.show_page("Chat")
        assert isinstance(page, ChatPage) and page.conversation is None
        await wait_until(lambda: page.picker.current_model() == picked, 10, "chat's model")
        page.picker.setCurrentIndex(page.picker.findText(model_id))
        page.picker.activated.emit(page.picker.currentIndex())
        await wait_until(lambda: window.model == model_id, 10, "the chat page's pick")
        assert _checked_in_tray(ui) == [model_id]
        async with DaemonClient.for_home(ui.bridge.home) as client:
            assert (await client.gateway_models()).active_model == model_id

    with serving_daemon(llama_server_binary, home_root, tmp_path / "xdg"):
        run(ui, qloop, scenario())
    ui.window.deleteLater()
