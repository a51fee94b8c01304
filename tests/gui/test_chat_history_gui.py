"""The Chat page's history features against a real daemon: with the real llama-server,
regenerate a reply and edit an earlier message, each keeping the old version, and switch
back and forth with "‹ 2/2 ›"; then (no engine needed) search over the list, export as
JSON and Markdown then import gives the same conversation, and a system-prompt preset
saved, picked for a chat and deleted."""

from __future__ import annotations

import json
from pathlib import Path

import qasync
from PySide6.QtWidgets import QApplication

from roundhouse.api.chat import Role
from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from roundhouse.gui.pages.chat_page import ChatPage
from roundhouse.gui.widgets.chat_settings import NO_PRESET
from tests.api.test_chat_history_api import BRANCHED
from tests.daemon_process import DaemonProcess
from tests.gui.conftest import wait_until
from tests.gui.test_chat_page import REPLY_S, _new_reply, _page, _run, _send, _serve, _stored


def _shape(page: ChatPage) -> list[tuple[str, str]]:
    """Each message shown: its role and its switcher's text ("" without versions)."""
    return [
        (w.role.value, w.branch_label.text() if w.switcher.isVisibleTo(page) else "")
        for w in page.transcript.messages
    ]


def test_regenerate_and_edit_keep_the_old_versions_and_switch_back_and_forth(
    qapp: QApplication,
    ui: Ui,
    qloop: qasync.QEventLoop,
    llama_daemon: DaemonProcess,
    tiny_gguf: Path,
) -> None:
    async def scenario() -> None:
        model = await _serve(llama_daemon, tiny_gguf)
        page = await _page(ui, model)
        page.settings.max_tokens.setValue(8)
        _send(page, "First question")
        first = await _new_reply(page, None)
        _send(page, "Second question")
        second = await _new_reply(page, first)
        assert second.message is not None and _shape(page) == [
            ("user", ""),
            ("assistant", ""),
            ("user", ""),
            ("assistant", ""),
        ]

        # Regenerate an earlier reply (not only the last): the old one stays, 2/2 shown.
        earlier = page.transcript.messages[1]
        assert earlier.regenerate_button.isVisibleTo(page) and earlier.regenerate_button.isEnabled()
        old_first = earlier.message
        assert old_first is not None
        earlier.regenerate_button.click()
        again = await _new_reply(page, second)
        assert again.message is not None and again.message.id != old_first.id
        assert _shape(page) == [("user", ""), ("assistant", "2/2")]
        assert again.previous_button.isEnabled() and not again.next_button.isEnabled()

        # Back to the first version: the path follows it to what came after it.
        again.previous_button.click()
        await wait_until(lambda: len(page.transcript.messages) == 4, REPLY_S, "the old branch")
        assert _shape(page)[1] == ("assistant", "1/2")
        assert page.transcript.messages[1].message == old_first.model_copy(
            update={"sibling_ids": (old_first.id, again.message.id)}
        )
        assert page.transcript.messages[3].content == second.content
        page.transcript.messages[1].next_button.click()
        await wait_until(lambda: len(page.transcript.messages) == 2, REPLY_S, "the new branch")
        assert page.transcript.messages[1].content == again.content

        # Edit the first question: a second version of it, answered; the old one kept.
        question = page.transcript.messages[0]
        question.edit_button.click()
        assert question.editor is not None
        question.editor.setPlainText("First question, put better")
        question.submit_edit()
        edited = await _new_reply(page, page.transcript.messages[1])
        assert _shape(page) == [("user", "2/2"), ("assistant", "")]
        assert page.transcript.messages[0].content == "First question, put better"
        page.transcript.messages[0].previous_button.click()
        await wait_until(
            lambda: page.transcript.messages[0].content == "First question", REPLY_S, "switched"
        )
        # The old question comes back with the reply it had last (the regenerated one).
        assert [w.content for w in page.transcript.messages] == ["First question", again.content]
        assert page.conversation is not None
        stored = await _stored(llama_daemon, page.conversation.id)
        assert stored.message_count == 7 and stored.messages[-1].id == again.message.id
        assert edited.message is not None and edited.message.role == Role.ASSISTANT

    _run([ui], qloop, scenario())


def test_search_export_import_and_presets(
    qapp: QApplication, ui: Ui, qloop: qasync.QEventLoop, daemon: DaemonProcess, tmp_path: Path
) -> None:
    async def scenario() -> None:
        page = ui.window.show_page("Chat")
        assert isinstance(page, ChatPage)
        ui.bridge.start()
        source = tmp_path / "trains.json"
        source.write_text(json.dumps(BRANCHED), encoding="utf-8")
        await wait_until(
            lambda: page.history is not None and ui.bridge.state.value == "connected",
            20,
            "connected",
        )

        # Import: the conversation opens, its branches with the switcher.
        page.history.import_from(source)
        await wait_until(lambda: page.conversation is not None, 20, "the import")
        assert page.conversation is not None
        imported = page.conversation.id
        assert [w.content for w in page.transcript.messages] == [
            "Steam or diesel?",
            "Diesel.",
            "Why diesel?",
        ]
        assert _shape(page)[1] == ("assistant", "2/2")
        assert "Imported" in page.message_label.text()
        await wait_until(lambda: imported in page.conversations.ids(), 10, "listed")

        # The list's menu exports the open conversation; JSON then import is the same chat.
        view = page.conversations
        assert [a.text() for a in view.menu.actions()] == [
            "Export as Markdown…",
            "Export as JSON…",
            "Import…",
        ]
        assert view.export_json_action.isEnabled()
        out = tmp_path / "out.json"
        page.history.export_to(out, "json")
        await wait_until(out.exists, 10, "the JSON written")
        markdown = tmp_path / "out.md"
        page.history.export_to(markdown, "md")
        await wait_until(markdown.exists, 10, "the Markdown written")
        assert markdown.read_text(encoding="utf-8").startswith("# Trains")
        page.history.import_from(out)
        await wait_until(
            lambda: page.conversation is not None and page.conversation.id != imported,
            20,
            "the second import",
        )
        assert [w.content for w in page.transcript.messages] == [
            "Steam or diesel?",
            "Diesel.",
            "Why diesel?",
        ]
        async with DaemonClient(daemon.url, daemon.token) as client:
            a = await client.export_chat(imported)
            assert page.conversation is not None
            b = await client.export_chat(page.conversation.id)
        assert [(m.role, m.content, m.parent is None) for m in a.messages] == [
            (m.role, m.content, m.parent is None) for m in b.messages
        ]
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({**BRANCHED, "version": 5}), encoding="utf-8")
        page.history.import_from(bad)
        await wait_until(lambda: "version 5" in page.message_label.text(), 10, "refused")
        assert page.message_label.text().startswith("Not imported:")

        # Search: hits in place of the list; a message's hit opens its branch.
        view.search.setText("steam")
        await wait_until(lambda: view.results.count() >= 2, 10, "the hits")
        assert not view.list.isVisibleTo(page) and view.results.isVisibleTo(page)
        texts = [view.results.item(i).text() for i in range(view.results.count())]
        assert any("Steam or diesel?" in t for t in texts)
        view.search.setText("zeppelin")
        await wait_until(lambda: "Nothing matches" in view.results_note.text(), 10, "none")
        view.search.setText("steam.")
        await wait_until(
            lambda: any(
                "reply: Steam." in view.results.item(i).text() for i in range(view.results.count())
            ),
            10,
            "the reply's hit",
        )
        hit = next(
            view.results.item(i)
            for i in range(view.results.count())
            if "reply: Steam." in view.results.item(i).text()
        )
        view.results.itemActivated.emit(hit)
        await wait_until(
            lambda: [w.content for w in page.transcript.messages][-1:] == ["Steam."],
            10,
            "the branch of the hit",
        )
        view.search.clear()
        assert view.list.isVisibleTo(page) and not view.results.isVisibleTo(page)

        # Presets: save the prompt as one, pick it for a new chat, delete it.
        page.settings_button.click()
        settings = page.settings
        settings.system_prompt.setPlainText("Answer like a conductor.")
        settings.save_preset_as("Conductor")
        await wait_until(lambda: settings.preset_picker.findText("Conductor") > 0, 10, "listed")
        assert settings.preset() == "Conductor"
        assert settings.preset_picker.currentText() == "Conductor"
        assert page.conversation is not None
        chat_id = page.conversation.id
        await wait_until(lambda: _preset_of(daemon, chat_id) == "Conductor", 10, "saved on it")

        page.new_chat()
        settings.set_values("", settings.values()[1])
        assert settings.preset_picker.currentText() == NO_PRESET
        settings.preset_picker.activated.emit(settings.preset_picker.findText("Conductor"))
        assert settings.system_prompt.toPlainText() == "Answer like a conductor."
        assert settings.preset() == "Conductor"
        # Changed by hand, it is no longer the preset.
        settings.system_prompt.setPlainText("Answer like a driver.")
        assert settings.preset() is None and settings.preset_picker.currentText() == NO_PRESET
        settings.pick_preset("Conductor")
        settings.delete_preset_button.click()
        await wait_until(lambda: settings.preset_picker.findText("Conductor") < 0, 10, "deleted")
        assert settings.preset() is None
        # The chat that used it keeps its text and the name.
        stored = await _stored(daemon, chat_id)
        assert (stored.preset, stored.system_prompt) == ("Conductor", "Answer like a conductor.")

    _run([ui], qloop, scenario())


def _preset_of(daemon: DaemonProcess, chat_id: str) -> str | None:
    import httpx

    with httpx.Client(trust_env=False, timeout=10) as client:
        answer = client.get(
            f"{daemon.url}/api/v1/chats/{chat_id}",
            headers={"Authorization": f"Bearer {daemon.token}"},
        )
        preset: str | None = answer.json()["preset"]
        return preset
