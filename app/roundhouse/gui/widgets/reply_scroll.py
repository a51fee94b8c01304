"""A streamed reply's Markdown in a scroll area, repainted on a timer and following the end.

Pieces of a reply may come thousands a second; `schedule()` asks for a repaint and a
single-shot timer makes it at most every REPAINT_MS, so the event loop stays free.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QScrollArea, QVBoxLayout, QWidget

from roundhouse.gui.widgets.chat_markdown import CodeBlock, MarkdownView

REPAINT_MS = 100
# Within this many pixels of the end counts as "at the end".
BOTTOM_SLACK_PX = 24


class ReplyScroll(QScrollArea):
    """Shows what `source()` returns; the view follows the end unless scrolled up."""

    def __init__(self, source: Callable[[], tuple[str, bool]], parent: QWidget | None = None):
        super().__init__(parent)
        # (markdown, final): final once the reply ended, so its last block is laid out whole.
        self._source = source
        # The chat page's view: prose as rich text, code blocks with Copy; a text that grows
        # re-renders only its tail.
        self.view = MarkdownView()
        self.renders = 0
        box = QWidget()
        layout = QVBoxLayout(box)
        layout.addWidget(self.view)
        layout.addStretch(1)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWidget(box)
        self._follows_end = True
        self.verticalScrollBar().rangeChanged.connect(self._on_bar_range_changed)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(REPAINT_MS)
        self._timer.timeout.connect(self.show_now)

    def schedule(self) -> None:
        if not self._timer.isActive():
            self._timer.start()

    def show_now(self) -> None:
        self._timer.stop()
        bar = self.verticalScrollBar()
        self._follows_end = bar.value() >= bar.maximum() - BOTTOM_SLACK_PX
        markdown, final = self._source()
        self.view.set_markdown(markdown, final=final)
        self.renders += 1

    def shown_text(self) -> str:
        """The source of the blocks on screen: prose as Markdown, code as it is."""
        return "\n".join(
            block.code if isinstance(block, CodeBlock) else block.source
            for block in self.view.blocks
        )

    def _on_bar_range_changed(self, _minimum: int, maximum: int) -> None:
        if self._follows_end:
            self.verticalScrollBar().setValue(maximum)
