"""The page's notices and empty states: hidden until told something, the sentence shown and
selectable, buttons in the order added (a notice's to the left, an empty state's centred),
each calling its action."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton
from pytestqt.qtbot import QtBot

from roundhouse.gui.widgets.empty_state import EmptyState
from roundhouse.gui.widgets.message_panel import MessagePanel
from roundhouse.gui.widgets.notice import Notice


def _shown(qtbot: QtBot, panel: MessagePanel) -> list[QPushButton]:
    pressed: list[str] = []
    first = panel.add_action("First", lambda: pressed.append("first"))
    second = panel.add_action("Second", lambda: pressed.append("second"))
    assert panel.isHidden(), "a panel shows once it has something to say"
    panel.show_text("Nothing here yet. Download a model.", tooltip="why")
    panel.resize(600, 200)
    qtbot.waitExposed(panel)
    assert panel.text() == "Nothing here yet. Download a model."
    assert panel.message_label.toolTip() == "why"
    assert panel.message_label.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse
    assert first.x() < second.x(), "buttons in the order added"
    qtbot.mouseClick(second, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(first, Qt.MouseButton.LeftButton)
    assert pressed == ["second", "first"]
    return [first, second]


def test_a_notice_puts_its_buttons_on_the_left(qtbot: QtBot) -> None:
    notice = Notice(tone="warning")
    qtbot.addWidget(notice)
    first, _ = _shown(qtbot, notice)
    assert notice.property("tone") == "warning"
    assert first.x() < notice.width() / 4


def test_an_empty_state_centres_its_sentence_and_buttons(qtbot: QtBot) -> None:
    empty = EmptyState("inbox")
    qtbot.addWidget(empty)
    first, second = _shown(qtbot, empty)
    middle = (first.x() + second.x() + second.width()) / 2
    assert abs(middle - empty.width() / 2) <= 2
    assert empty.message_label.alignment() & Qt.AlignmentFlag.AlignHCenter
    assert empty.icon_label.pixmap() is not None and not empty.icon_label.pixmap().isNull()
