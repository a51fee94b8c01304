"""Links and images in a reply, in the Chat page against a real daemon: a web link shows its
address on hover and opens only after the user saw it and chose Open; file, share, script
and data links are refused with words; images are shown as link text and never loaded."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QObject, QPoint, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices, QTextDocument
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox, QTextBrowser

from roundhouse.api.chat import NewConversation, NewMessage, Role
from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.chat_page import ChatPage
from roundhouse.gui.widgets.chat_markdown import MarkdownView, TextBlock
from roundhouse.gui.widgets.link_prompt import OPEN
from roundhouse.gui.widgets.reply_html import LocalOnlyBrowser
from tests.daemon_process import DaemonProcess
from tests.gui.conftest import wait_until

WEB = "https://example.com/docs?page=2#models"
# A 1x1 PNG: what a stock text browser would load and show.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


class _Browser(QObject):
    """Stands in for the system's browser and file manager: records what it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.opened.append(url.toString())


@pytest.fixture
def browser(qapp: QApplication) -> Iterator[_Browser]:
    recorder = _Browser()
    schemes = ("http", "https", "file", "javascript", "data", "smb")
    for scheme in schemes:
        QDesktopServices.setUrlHandler(scheme, recorder, "open")
    yield recorder
    for scheme in schemes:
        QDesktopServices.unsetUrlHandler(scheme)


def _reply(image: Path) -> str:
    return (
        f"Read [the docs]({WEB}) first.\n\n"
        "Not these: [a file](file:///etc/passwd), [a share](file://server/share/x.txt), "
        "[a script](javascript:alert(1)), [data](data:text/html,hi).\n\n"
        f"A picture: ![a cat]({image.as_uri()}) and one on a share: "
        "![a dog](//server/share/dog.png)\n\n"
        f'Raw HTML stays text: <img src="{image.as_uri()}"> <b>bold?</b>\n'
    )


def _hover_to_link(block: TextBlock, href: str) -> QPoint:
    """Move the mouse over the block until it is over the link to `href`, as a user does."""
    hovered: list[str] = []
    block.linkHovered.connect(hovered.append)
    for y in range(2, block.height(), 3):
        for x in range(2, block.width(), 3):
            QTest.mouseMove(block, QPoint(x, y))
            if hovered and hovered[-1] == href:
                return QPoint(x, y)
    raise AssertionError(f"no link to {href} under the mouse: {hovered}")


def test_links_open_only_after_the_address_is_shown_and_nothing_is_fetched(
    ui: Ui,
    qloop: qasync.QEventLoop,
    daemon: DaemonProcess,
    browser: _Browser,
    tmp_path: Path,
) -> None:
    image = tmp_path / "cat.png"
    image.write_bytes(PNG)

    async def scenario() -> None:
        async with DaemonClient(daemon.url, daemon.token) as client:
            conversation = await client.create_chat(
                NewConversation(
                    title="Links",
                    messages=[
                        NewMessage(role=Role.USER, content="Where do I read more?"),
                        NewMessage(role=Role.ASSISTANT, content=_reply(image)),
                    ],
                )
            )
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        ui.window.show_chat(conversation.id)
        page = ui.window.show_page("Chat")
        assert isinstance(page, ChatPage)
        await wait_until(lambda: len(page.transcript.messages) == 2, 10, "the messages")
        await asyncio.sleep(0.1)  # laid out
        reply = page.transcript.messages[1]
        (first,) = reply.body.blocks  # prose only: one block
        assert isinstance(first, TextBlock)
        refused = pictures = raw = first

        # Hovering shows the whole address; a click asks first, with the address.
        point = _hover_to_link(first, WEB)
        assert first.toolTip() == WEB
        QTest.mouseClick(first, Qt.MouseButton.LeftButton, pos=point)
        box = first.link_box
        assert box is not None and box.isVisible() and WEB in box.text()
        assert browser.opened == [], "nothing opens before the user chooses Open"
        box.button(QMessageBox.StandardButton.Cancel).click()
        await wait_until(lambda: first.link_box is None, 5, "the box to close")
        assert browser.opened == []
        QTest.mouseClick(first, Qt.MouseButton.LeftButton, pos=point)
        box = first.link_box
        assert box is not None
        next(b for b in box.buttons() if b.text() == OPEN).click()
        await wait_until(lambda: browser.opened == [WEB], 5, "the browser to be asked")

        # Files, shares, scripts and data: refused with words, never handed on.
        for href, words in [
            ("file:///etc/passwd", "Links to files"),
            ("file://server/share/x.txt", "Links to files"),
            ("javascript:alert(1)", "'javascript:' link"),
            ("data:text/html,hi", "'data:' link"),
        ]:
            refused.linkActivated.emit(href)
            box = refused.link_box
            assert box is not None and box.isVisible()
            assert words in box.text() and "does not open" in box.text()
            assert box.buttons() == [box.button(QMessageBox.StandardButton.Ok)]
            box.button(QMessageBox.StandardButton.Ok).click()
            await wait_until(lambda: refused.link_box is None, 5, "the box to close")
        assert browser.opened == [WEB]

        # Images are link text, and their addresses go through the same decision.
        shown = pictures.text()
        assert "<img" not in shown and "[image: a cat]" in shown and "[image: a dog]" in shown
        assert f'href="{image.as_uri()}"' in shown
        pictures.linkActivated.emit("//server/share/dog.png")
        box = pictures.link_box
        assert box is not None and "network shares" in box.text()
        box.button(QMessageBox.StandardButton.Ok).click()
        # Raw HTML from the model is shown as its text, not obeyed.
        assert "<img" not in raw.text() and "&lt;img src=" in raw.text()
        assert "&lt;b&gt;bold?&lt;/b&gt;" in raw.text()
        assert browser.opened == [WEB]

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())


def test_the_local_only_browser_loads_nothing_a_stock_one_would(
    qapp: QApplication, tmp_path: Path
) -> None:
    image = tmp_path / "cat.png"
    image.write_bytes(PNG)
    url = QUrl.fromLocalFile(str(image))
    kind = int(QTextDocument.ResourceType.ImageResource.value)
    assert QTextBrowser().loadResource(kind, url), "a stock browser reads the file"
    assert LocalOnlyBrowser().loadResource(kind, url) is None


def test_a_reply_block_renders_images_as_text_while_streaming(qapp: QApplication) -> None:
    view = MarkdownView()
    view.set_markdown("Look: ![", final=False)
    view.set_markdown("Look: ![chart](https://example.com/c.png)", final=False)
    (block,) = view.blocks
    assert isinstance(block, TextBlock)
    assert "<img" not in block.text() and "[image: chart]" in block.text()
    view.set_markdown("[![badge](https://example.com/b.svg)](https://example.com/home)")
    (block,) = view.blocks
    assert isinstance(block, TextBlock)
    assert "<img" not in block.text() and "[image: badge]" in block.text()
    assert 'href="https://example.com/b.svg"' in block.text()
    view.deleteLater()
