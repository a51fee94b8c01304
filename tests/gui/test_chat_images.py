"""Images in the app against a real daemon and the real llama-server (ADR 45): the start
dialog's Vision projector starts the tiny model with a tiny projector made by the test; on
the Chat page an image attached, pasted and dropped goes with a message, shows as a
thumbnail and is kept; a model started without a projector says so as soon as an image is
attached, and nothing is sent."""

from __future__ import annotations

import base64
from pathlib import Path

import qasync
from PySide6.QtCore import QMimeData, Qt, QUrl
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLabel, QWidget

from roundhouse.api.chat import Role
from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceStatus, StartRequest
from roundhouse.api.vision import no_vision_words
from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from roundhouse.gui.pages.chat_page import ChatPage
from tests.daemon_process import DaemonProcess, start_ready
from tests.fixtures.models.tiny_llama import write_tiny_llama_gguf
from tests.fixtures.models.tiny_mmproj import write_tiny_mmproj_gguf
from tests.gui.conftest import wait_until
from tests.gui.test_instances import READY_S, _connected, _open_dialog, _run
from tests.integration.test_vision_chat import png

SEEING = "tiny-seeing"
BLIND = "tiny-blind"
REPLY_S = 60.0


async def _chat_page(ui: Ui, model: str) -> ChatPage:
    page = ui.window.show_page("Chat")
    assert isinstance(page, ChatPage)
    await wait_until(lambda: page.picker.findText(model) >= 0, 20, f"{model} in the picker")
    page.picker.setCurrentIndex(page.picker.findText(model))
    return page


def test_the_start_dialogs_projector_and_images_in_the_chat(
    ui: Ui, qloop: qasync.QEventLoop, llama_daemon: DaemonProcess, tmp_path: Path
) -> None:
    (tmp_path / "модель").mkdir()
    model = write_tiny_llama_gguf(tmp_path / "модель" / "tiny-vl.gguf", seed=0)
    projector = write_tiny_mmproj_gguf(tmp_path / "проектор mmproj-f16.gguf", seed=0)
    picture = tmp_path / "фото.png"
    picture.write_bytes(png(40, 30))

    async def scenario() -> None:
        page = await _connected(ui)
        # -- the start dialog: the field shows for llama.cpp and reaches the argv ----------
        dialog = _open_dialog(page, model)
        assert not dialog.projector.isHidden()
        dialog.served_name.setText(SEEING)
        dialog.projector.edit.setText(str(projector))
        assert dialog.options().mmproj == str(projector)
        dialog.start_button.click()  # the dialog closes (and goes) once the daemon accepts

        def seeing_ready() -> bool:
            found = [i for i in ui.bridge.instances or () if SEEING in i.models]
            return bool(found) and found[0].status is InstanceStatus.READY

        await wait_until(seeing_ready, READY_S, "the seeing instance")
        info = next(i for i in ui.bridge.instances or () if SEEING in i.models)
        assert info.argv[info.argv.index("--mmproj") + 1] == str(projector)
        assert info.vision is True
        # The same model without one (nothing lies beside it to pair).
        blind = InstanceOptions(model=str(model), ctx_size=512, parallel=1, served_name=BLIND)
        await start_ready(
            llama_daemon, StartRequest(engine=EngineId.LLAMA_CPP, options=blind), READY_S
        )

        # -- an image attached from a file, then one pasted: both go with the message ----
        chat = await _chat_page(ui, SEEING)
        chat.settings.max_tokens.setValue(2)
        chat.attachments.add_files([str(picture)])
        pasted = QMimeData()
        pasted.setImageData(QImage(str(picture)))
        chat.input.insertFromMimeData(pasted)
        assert len(chat.attachments.images()) == 2 and chat.input.toPlainText() == ""
        assert chat.attachments.note.isHidden()
        chat.input.setPlainText("What is in these?")
        QTest.keyClick(chat.input, Qt.Key.Key_Return)

        def answered() -> bool:
            messages = chat.transcript.messages
            last = messages[-1] if messages else None
            return last is not None and last.role == Role.ASSISTANT and last.message is not None

        await wait_until(answered, REPLY_S, f"the reply ({chat.message_label.text()})")
        reply = chat.transcript.messages[-1]
        assert reply.stats is not None and reply.stats.error is None, reply.stats
        assert chat.attachments.images() == () and chat.attachments.isHidden()
        user = chat.transcript.messages[-2]
        row = user.findChild(QWidget, "chatThumbnails")
        assert row is not None
        thumbs = [label for label in row.findChildren(QLabel) if not label.pixmap().isNull()]
        assert len(thumbs) == 2
        assert chat.conversation is not None
        async with DaemonClient(llama_daemon.url, llama_daemon.token) as client:
            stored = await client.chat(chat.conversation.id)
        first = stored.messages[0]
        assert first.images[0] == "data:image/png;base64," + base64.b64encode(
            picture.read_bytes()
        ).decode("ascii")
        assert len(first.images) == 2 and first.images[1].startswith("data:image/png;base64,")

        # -- a model without vision says so once an image is dropped; nothing is sent ----
        chat.new_chat()
        chat.picker.setCurrentIndex(chat.picker.findText(BLIND))
        listed = len(chat._listed)
        dropped = QMimeData()
        dropped.setUrls([QUrl.fromLocalFile(str(picture))])
        assert chat.input.canInsertFromMimeData(dropped)
        chat.input.insertFromMimeData(dropped)
        assert chat.attachments.note.text() == no_vision_words(BLIND)
        assert chat.attachments.note.isVisible()
        chat.input.setPlainText("And this?")
        QTest.keyClick(chat.input, Qt.Key.Key_Return)
        assert chat.reply is None and not chat.busy and chat.conversation is None
        assert chat.input.toPlainText() == "And this?" and len(chat._listed) == listed
        # Picking a model that sees takes the words back; picking the blind one says them.
        chat.picker.setCurrentIndex(chat.picker.findText(SEEING))
        assert chat.attachments.note.isHidden() and len(chat.attachments.images()) == 1
        chat.picker.setCurrentIndex(chat.picker.findText(BLIND))
        assert chat.attachments.note.text() == no_vision_words(BLIND)
        # Removing the image lets the message go as text.
        chat.attachments.remove(0)
        assert chat.attachments.isHidden()

    _run(ui, qloop, scenario())
