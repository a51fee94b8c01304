"""The Chat page's list of conversations against a real daemon: a long title ends in "…"
within the list's width, never in a sideways scroll."""

from __future__ import annotations

import qasync
from PySide6.QtWidgets import QStyleOptionViewItem

from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.chat_page import ChatPage
from tests.daemon_process import DaemonProcess
from tests.gui.conftest import wait_until

LONG_TITLE = ("Which of the three quantizations keeps the most quality on a laptop " * 2).strip()


def test_a_long_title_is_elided_not_scrolled(
    ui: Ui, qloop: qasync.QEventLoop, daemon: DaemonProcess
) -> None:
    with daemon.control() as http:
        for title in (LONG_TITLE, "Short one"):
            reply = http.post("/api/v1/chats", json={"title": title})
            assert reply.status_code in (200, 201), reply.text

    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        page = ui.window.show_page(ChatPage.title)
        assert isinstance(page, ChatPage)
        view = page.conversations.list
        await wait_until(lambda: view.count() == 2, 10, "the two conversations")
        long_item = next(view.item(r) for r in range(2) if view.item(r).text() == LONG_TITLE)
        assert LONG_TITLE in long_item.toolTip(), "the whole title on hover"

        viewport = view.viewport().width()
        assert view.fontMetrics().horizontalAdvance(LONG_TITLE) > viewport, "a title too long"
        # The row is as wide as the list, so the view draws the title elided at its end...
        assert view.visualItemRect(long_item).width() <= viewport
        assert view.horizontalScrollBar().maximum() == 0, "nothing to scroll sideways to"
        option = QStyleOptionViewItem()
        option.initFrom(view)
        hint = view.itemDelegate().sizeHint(option, view.indexFromItem(long_item))
        assert hint.width() <= viewport
        # ...as it does when the list is made narrower or wider.
        page.conversations.setFixedWidth(160)
        await wait_until(lambda: view.viewport().width() < viewport, 5, "a narrower list")
        assert view.visualItemRect(long_item).width() <= view.viewport().width()
        assert view.horizontalScrollBar().maximum() == 0

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
