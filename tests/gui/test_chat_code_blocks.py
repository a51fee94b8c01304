"""Code blocks in a reply: coloured by language with Pygments (the palette picks the style),
Copy puts the code (never HTML) on the clipboard, Save… writes a file named for the language,
and the open block of a streaming reply is coloured at a bounded rate."""

from __future__ import annotations

from pathlib import Path

from pygments.styles import get_style_by_name
from pygments.token import Keyword, Name, _TokenType
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot
from shiboken6 import isValid

from roundhouse.gui import code_highlight
from roundhouse.gui.code_highlight import DARK_STYLE, LIGHT_STYLE, run_pending
from roundhouse.gui.icons import is_dark
from roundhouse.gui.theme.contrast import contrast_ratio, hex_rgb
from roundhouse.gui.theme.stylesheet import build_stylesheet
from roundhouse.gui.theme.tokens import Scheme, colours
from roundhouse.gui.widgets.chat_markdown import CodeBlock, MarkdownView

PYTHON = "def greet(name: str) -> str:\n    return f'hello {name}'\n\nclass Door:\n    pass"
PLAIN = "total 8\ndrwxr-xr-x 2 me me 4096 Nov 29 ."
REPLY = f"Here it is:\n\n```python\n{PYTHON}\n```\n\nThe output:\n\n```\n{PLAIN}\n```\n"


def _colour(style: str, token: _TokenType) -> str:
    return f"#{get_style_by_name(style).style_for_token(token)['color'] or ''}".lower()


def _shown_colours(block: CodeBlock) -> set[str]:
    """The colours on screen: the formats the highlighter laid on each line of the view."""
    colours: set[str] = set()
    document_block = block.view.document().firstBlock()
    while document_block.isValid():
        for fmt in document_block.layout().formats():
            colours.add(fmt.format.foreground().color().name())
        document_block = document_block.next()
    return colours


def _view(qtbot: QtBot, text: str) -> MarkdownView:
    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_markdown(text)
    run_pending()
    return view


def test_a_python_fence_is_coloured_and_a_bare_fence_stays_plain(
    qapp: QApplication, qtbot: QtBot
) -> None:
    view = _view(qtbot, REPLY)
    python, plain = view.code_blocks()
    style = DARK_STYLE if is_dark(python.palette()) else LIGHT_STYLE
    keyword = _colour(style, Keyword)
    html = python.html()
    assert f'<span style="color:{keyword};' in html and ">def</span>" in html
    assert f'<span style="color:{keyword};font-weight:bold;">class</span>' in html or (
        f'<span style="color:{keyword};">class</span>' in html
    )
    assert keyword in _shown_colours(python), "the view shows the style's keyword colour"
    assert _colour(style, Name.Function) in _shown_colours(python)
    assert python.language_label.text() == "python"
    # No language and nothing cheap to tell it by: shown as it is, no colour guessed.
    assert plain.language_label.text() == "" and plain.html().count("<span") == 0
    assert _shown_colours(plain) == set()
    assert plain.view.toPlainText() == PLAIN


def test_copy_puts_the_code_not_the_html_on_the_clipboard(qapp: QApplication, qtbot: QtBot) -> None:
    view = _view(qtbot, REPLY)
    python, plain = view.code_blocks()
    python.copy_button.click()
    assert QGuiApplication.clipboard().text() == PYTHON
    assert QGuiApplication.clipboard().mimeData().hasHtml() is False
    plain.copy_button.click()
    assert QGuiApplication.clipboard().text() == PLAIN


def test_save_writes_the_code_to_a_file_named_for_its_language(
    qapp: QApplication, qtbot: QtBot, tmp_path: Path
) -> None:
    view = _view(qtbot, REPLY)
    python, plain = view.code_blocks()
    python.save_button.click()
    dialog = python.save_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.selectedFiles()[0].endswith("snippet.py")
    target = tmp_path / "greet.py"
    dialog.selectFile(str(target))
    dialog.accept()
    assert target.read_text() == PYTHON + "\n"
    assert python.save_dialog is None
    plain.save_button.click()
    assert plain.save_dialog is not None
    assert plain.save_dialog.selectedFiles()[0].endswith("snippet.txt")
    plain.save_dialog.reject()
    # A folder that is not there: said in words, nothing written.
    assert not plain.save_to(str(tmp_path / "missing" / "out.txt"))
    assert plain.save_error is not None
    assert "its folder does not exist" in plain.save_error.text()
    assert "Errno" not in plain.save_error.text()
    plain.save_error.close()


def test_a_shebang_or_json_tells_the_language_of_a_bare_fence(
    qapp: QApplication, qtbot: QtBot
) -> None:
    text = '```\n#!/usr/bin/env python3\nimport sys\n```\n\n```\n{"a": [1, 2]}\n```\n'
    view = _view(qtbot, text)
    script, data = view.code_blocks()
    assert script.language_label.text() == "python"
    assert data.language_label.text() == "json"
    assert _shown_colours(script), "the guessed language is coloured"


def test_a_dark_palette_switches_to_the_dark_style(qapp: QApplication, qtbot: QtBot) -> None:
    view = _view(qtbot, REPLY)
    python = view.code_blocks()[0]
    palette = QPalette(python.palette())
    dark = not is_dark(palette)
    colour = QColor("#202124") if dark else QColor("#f5f5f5")
    palette.setColor(QPalette.ColorRole.Window, colour)
    python.setPalette(palette)
    run_pending()
    style = DARK_STYLE if dark else LIGHT_STYLE
    assert _colour(style, Keyword) in _shown_colours(python)
    fill = colours(Scheme.DARK if dark else Scheme.LIGHT).code_fill.lower()
    assert python.view.palette().color(QPalette.ColorRole.Base).name() == fill


def test_every_token_colour_reads_on_the_themes_code_fill() -> None:
    """4.5:1 or more for body text, in both themes (whitespace's colour is never seen)."""
    for style, scheme in ((LIGHT_STYLE, Scheme.LIGHT), (DARK_STYLE, Scheme.DARK)):
        fill = hex_rgb(colours(scheme).code_fill)
        for token, spec in get_style_by_name(style):
            if spec["color"] and not str(token).startswith("Token.Text.Whitespace"):
                ratio = contrast_ratio(hex_rgb(f"#{spec['color']}"), fill)
                assert ratio >= 4.5, f"{style}: {token} #{spec['color']} is {ratio:.2f}:1"


def test_the_open_block_is_coloured_while_it_streams_at_a_bounded_rate(
    qapp: QApplication, qtbot: QtBot
) -> None:
    view = MarkdownView()
    qtbot.addWidget(view)
    text = "Streaming:\n\n```python\n"
    view.set_markdown(text, final=False)
    block = view.code_blocks()[0]
    for i in range(30):
        text += f"def f{i}(x):\n    return x + {i}\n"
        view.set_markdown(text, final=False)
    # Nothing lexed at once: the pass waits its interval.
    assert block.highlighter.formats == {}
    qtbot.waitUntil(lambda: len(block.highlighter.formats) >= 30, timeout=3000)
    style = DARK_STYLE if is_dark(block.palette()) else LIGHT_STYLE
    assert _colour(style, Keyword) in _shown_colours(block)
    text += "```\nDone."
    view.set_markdown(text, final=True)
    run_pending()
    assert block.closed and len(block.highlighter.formats) >= 60
    assert code_highlight.STREAM_PASS_MS >= 100


def test_a_block_closed_while_its_colours_are_queued_is_skipped(
    qapp: QApplication, qtbot: QtBot
) -> None:
    view = MarkdownView()
    view.set_markdown(REPLY)  # both blocks queued, none lexed yet
    assert view.code_blocks()[0].highlighter.formats == {}
    view.deleteLater()
    qtbot.waitUntil(lambda: not isValid(view), timeout=2000)
    run_pending()  # nothing raised for the highlighters gone with the view
    after = _view(qtbot, REPLY)
    assert _shown_colours(after.code_blocks()[0]), "the queue still runs"


def test_a_short_block_shows_every_line_without_a_scroll_bar_in_the_theme(
    qapp: QApplication, qtbot: QtBot
) -> None:
    view = MarkdownView()
    qtbot.addWidget(view)
    # The theme's padding around the view (not applied app-wide: other tests share the app).
    view.setStyleSheet(build_stylesheet(Scheme.LIGHT, 10.0))
    view.resize(700, 400)
    view.show()
    view.set_markdown(REPLY)
    qtbot.waitExposed(view)
    qtbot.wait(50)  # laid out
    for block in view.code_blocks():
        bar = block.view.verticalScrollBar()
        assert bar.maximum() == 0, f"{block.language or 'plain'}: {bar.maximum()} to scroll"
