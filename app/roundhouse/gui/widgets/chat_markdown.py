"""A reply's Markdown on screen: prose as rich text, each fenced code block coloured by
language with Copy and Save….

While a reply streams only the last segment is touched: earlier blocks keep their widgets,
a streaming code block gets the new characters appended, never the whole text again, and
is coloured in time slices (gui/code_highlight.py).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QSize, Qt, QTimer
from PySide6.QtGui import (
    QFontDatabase,
    QGuiApplication,
    QPalette,
    QResizeEvent,
    QTextCursor,
)
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from roundhouse.gui.code_highlight import CodeHighlighter, extension_for, guess_language
from roundhouse.gui.icons import is_dark
from roundhouse.gui.markdown_segments import Segment, SegmentedText, SegmentKind
from roundhouse.gui.widgets.link_prompt import ask_to_open, link_tooltip
from roundhouse.gui.widgets.reply_html import reply_html

COPIED_MS = 1500
# A code block grows with its lines up to this many; past it, it scrolls inside.
MAX_CODE_LINES = 40
# What a text block asks for at least, so that a narrow window still fits it.
MIN_TEXT_WIDTH = 120


class WrappedLabel(QLabel):
    """A word-wrapped label whose height is worked out here, once per width or text.

    Qt lays out a word-wrapped label's text again for each height-for-width question, and a
    layout pass asks every label in the transcript (at two widths) whenever anything in it
    changes size: with a long conversation that was 100 ms for each repaint of a streaming
    reply. This label answers a plain size hint instead, from the height it measured.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        policy.setHeightForWidth(False)
        self.setSizePolicy(policy)
        self._measured_width = -1
        self._height = 0

    def setText(self, text: str) -> None:
        super().setText(text)
        self._measure(self.width(), force=True)

    def hasHeightForWidth(self) -> bool:
        # QLabel turns it back on with each text; the layout must not ask (see above).
        return False

    def sizeHint(self) -> QSize:
        return QSize(MIN_TEXT_WIDTH, self._height)

    def minimumSizeHint(self) -> QSize:
        return QSize(MIN_TEXT_WIDTH, self._height)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._measure(event.size().width())

    def _measure(self, width: int, *, force: bool = False) -> None:
        if width <= 0 or (width == self._measured_width and not force):
            return
        self._measured_width = width
        height = super().heightForWidth(width) if self.text() else 0
        if height != self._height:
            self._height = height
            self.updateGeometry()


class TextBlock(WrappedLabel):
    """Prose rendered from Markdown, selectable. Nothing in it is fetched (reply_html); a
    link shows its address on hover and opens only as link_prompt allows, after the user
    saw the whole address."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setOpenExternalLinks(False)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.LinksAccessibleByMouse
        )
        self.linkActivated.connect(self.open_link)
        self.linkHovered.connect(self._on_link_hovered)
        self.source = ""
        self.link_box: QMessageBox | None = None

    def set_source(self, markdown: str) -> None:
        if markdown != self.source:
            self.source = markdown
            self.setText(reply_html(markdown, self.font()))

    def open_link(self, href: str) -> None:
        self.link_box = ask_to_open(self.window(), href)
        self.link_box.finished.connect(self._forget_link_box)

    def _forget_link_box(self) -> None:
        self.link_box = None

    def _on_link_hovered(self, href: str) -> None:
        self.setToolTip(link_tooltip(href) if href else "")


class CodeBlock(QFrame):
    """A fenced code block: its language, Copy and Save…, the code read-only, monospace and
    coloured by language (the fence's, else a cheap guess once the block is closed)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("codeBlock")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.language_label = QLabel()
        self.language_label.setObjectName("hint")
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip("Copy this code block")
        self.copy_button.setFlat(True)
        self.copy_button.clicked.connect(self.copy)
        self.save_button = QPushButton("Save…")
        self.save_button.setToolTip("Save this code block as a file")
        self.save_button.setFlat(True)
        self.save_button.clicked.connect(self.ask_where_to_save)
        header = QHBoxLayout()
        header.setContentsMargins(8, 2, 2, 0)
        header.addWidget(self.language_label, 1)
        header.addWidget(self.copy_button)
        header.addWidget(self.save_button)
        self.view = QPlainTextEdit()
        self.view.setReadOnly(True)
        self.view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.view.setFrameShape(QFrame.Shape.NoFrame)
        self.view.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.highlighter = CodeHighlighter(self.view.document(), is_dark(self.palette()))
        self._colour_view()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 4)
        layout.setSpacing(0)
        layout.addLayout(header)
        layout.addWidget(self.view)
        self.code = ""
        self.language = ""  # the fence's, or the guess
        self.closed = False
        self.save_dialog: QFileDialog | None = None
        self.save_error: QMessageBox | None = None
        self._lines = 0
        self._widest = 0
        self._copied = QTimer(self)
        self._copied.setSingleShot(True)
        self._copied.timeout.connect(lambda: self.copy_button.setText("Copy"))
        self._fit()

    def set_code(self, code: str, language: str = "", *, closed: bool = True) -> None:
        if not language and closed:
            language = guess_language(code)
        if language != self.language:
            self.language = language
            self.language_label.setText(language)
        if code != self.code:
            self._show_code(code)
        self.closed = closed
        self.highlighter.update_code(code, language, closed=closed)

    def _show_code(self, code: str) -> None:
        if code.startswith(self.code) and self.code:
            # Streaming: append what came, leaving the document (and the selection) alone.
            cursor = QTextCursor(self.view.document())
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertText(code[len(self.code) :])
            touched = self.code.rfind("\n") + 1  # the last line may have grown
        else:
            self.view.setPlainText(code)
            touched, self._widest = 0, 0
        metrics = self.view.fontMetrics()
        for line in code[touched:].split("\n"):
            self._widest = max(self._widest, metrics.horizontalAdvance(line))
        self.code = code
        self._lines = code.count("\n") + 1
        self._fit()

    def html(self) -> str:
        """The code as HTML with the colours shown."""
        return self.highlighter.html()

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.code)
        self.copy_button.setText("Copied")
        self._copied.start(COPIED_MS)

    def ask_where_to_save(self) -> None:
        """A file dialog named after the language (snippet.py); the file is written once a
        name is chosen."""
        suggested = Path.home() / f"snippet{extension_for(self.language)}"
        dialog = QFileDialog(self.window(), "Save the code block", str(suggested))
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setFileMode(QFileDialog.FileMode.AnyFile)
        dialog.selectFile(str(suggested))
        dialog.fileSelected.connect(self.save_to)
        dialog.finished.connect(self._forget_save_dialog)
        self.save_dialog = dialog
        dialog.open()

    def _forget_save_dialog(self) -> None:
        self.save_dialog = None

    def save_to(self, path: str) -> bool:
        """Write the code to `path`; a failure is said in a message box, in words."""
        try:
            Path(path).write_text(self.code if self.code.endswith("\n") else f"{self.code}\n")
        except OSError as exc:
            box = QMessageBox(
                QMessageBox.Icon.Warning,
                "Not saved",
                f"The code was not saved to {path}: {_why_not_written(exc)}. "
                "Choose a folder you can write to and try again.",
                QMessageBox.StandardButton.Ok,
                self.window(),
            )
            self.save_error = box
            box.open()
            return False
        return True

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            # A theme switch: the colours follow (a dark style on a dark palette).
            self.highlighter.set_dark(is_dark(self.palette()))
            self._colour_view()
        elif event.type() == QEvent.Type.StyleChange:
            self._fit()  # the theme's padding may have changed

    def _colour_view(self) -> None:
        """The style's own background and text colour behind its colours, so each token
        reads as the style's authors checked it."""
        style = self.highlighter.style
        palette = self.view.palette()
        palette.setColor(QPalette.ColorRole.Base, style.background)
        palette.setColor(QPalette.ColorRole.Text, style.foreground)
        self.view.setPalette(palette)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        shown = min(max(self._lines, 1), MAX_CODE_LINES)
        # Room for the horizontal scroll bar only when a line is wider than the view.
        wide = self._widest > self.view.viewport().width() - 8
        scrollbar = self.view.horizontalScrollBar().sizeHint().height() if wide else 0
        # The theme's padding around the view counts too, or a scroll bar shows up for
        # the last line.
        padding = self.view.contentsMargins()
        margins = int(self.view.document().documentMargin() * 2) + 4
        margins += padding.top() + padding.bottom()
        height = shown * self.view.fontMetrics().lineSpacing() + margins + scrollbar
        if height != self.view.height():
            self.view.setFixedHeight(height)


def _why_not_written(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "its folder does not exist"
    if isinstance(exc, PermissionError):
        return "this account may not write there"
    if isinstance(exc, IsADirectoryError):
        return "that name is a folder"
    return "the file could not be written (is the disk full?)"


class MarkdownView(QWidget):
    """A stack of TextBlocks and CodeBlocks for one Markdown text, updated in place."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(6)
        self._segmented = SegmentedText()
        self.blocks: list[TextBlock | CodeBlock] = []

    @property
    def markdown(self) -> str:
        return self._segmented.text

    def set_markdown(self, text: str, *, final: bool = True) -> None:
        """Show `text`; a continuation of the last one re-renders its tail only."""
        if text == self._segmented.text and not final:
            return
        restart = not text.startswith(self._segmented.text)
        first = 0 if restart else self._segmented.stable
        changed = self._segmented.update(text, final=final)
        for index, segment in enumerate(changed, start=first):
            self._show(index, segment, final=final)
        for block in self.blocks[first + len(changed) :]:
            self._layout.removeWidget(block)
            block.deleteLater()
        del self.blocks[first + len(changed) :]

    def code_blocks(self) -> list[CodeBlock]:
        return [b for b in self.blocks if isinstance(b, CodeBlock)]

    def _show(self, index: int, segment: Segment, *, final: bool) -> None:
        wanted = CodeBlock if segment.kind == SegmentKind.CODE else TextBlock
        block = self.blocks[index] if index < len(self.blocks) else None
        if block is not None and not isinstance(block, wanted):
            self._layout.removeWidget(block)
            block.deleteLater()
            block = None
        if block is None:
            block = wanted(self)
            if index < len(self.blocks):
                self.blocks[index] = block
            else:
                self.blocks.append(block)
            self._layout.insertWidget(index, block)
        if isinstance(block, CodeBlock):
            block.set_code(segment.text, segment.language, closed=segment.closed or final)
        else:
            block.set_source(segment.text)
