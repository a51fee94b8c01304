"""Code blocks coloured by language with Pygments, lexed in time slices off the paint path.

A block's text is lexed by a job that yields to the event loop every few milliseconds (one
queue for every block on screen), and the colours land line by line through a
QSyntaxHighlighter, so only lines whose colours changed are laid out again. While a reply
streams, the open block is lexed again at most every STREAM_PASS_MS, from a recent line on
(a bounded window); once it closes it is lexed whole, once, so its colours are exact.
"""

from __future__ import annotations

import bisect
import json
import re
import time
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextDocument
from shiboken6 import isValid

from roundhouse.gui.theme.tokens import Scheme, colours

if TYPE_CHECKING:
    from pygments.lexer import Lexer

# Chosen by the palette. Both keep every token at 4.5:1 or more on the theme's code fill
# (tests/gui/test_chat_code_blocks.py); Pygments' "default" does not (its comments are 4.4).
DARK_STYLE = "github-dark"
LIGHT_STYLE = "xcode"
# How long one turn of the event loop may spend lexing, for all blocks together.
SLICE_MS = 2.0
# Between two slices the loop runs this long for everything else (repaints, input, the
# stream): lexing takes at most a fifth of it, however much is queued.
SLICE_GAP_MS = 8
# The open block of a streaming reply is coloured again at most this often.
STREAM_PASS_MS = 200
# A streaming pass lexes at most about this much of the open block's end.
STREAM_WINDOW_CHARS = 4000
# Past this a block is shown plain: colouring it would cost more than it helps.
MAX_HIGHLIGHT_CHARS = 300_000
# Without a fence language, a guess is made on a closed block no longer than this.
MAX_GUESS_CHARS = 4000
_SHEBANG = re.compile(r"^#!\s*(?:/usr)?(?:/local)?/bin/(?:env\s+(?:-\S+\s+)*)?(?P<name>[\w.+-]+)")
_NEWLINE = re.compile("\n")
_INTERPRETERS = {"sh": "bash", "zsh": "bash", "ksh": "bash", "node": "javascript"}

LineFormats = list[tuple[int, int, QTextCharFormat]]


@cache
def lexer_for_language(language: str) -> Lexer | None:
    """The lexer a fence's info word names (an alias or a file extension), or None."""
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
    from pygments.util import ClassNotFound

    name = language.strip().lower()
    if not name:
        return None
    try:
        return get_lexer_by_name(name)
    except ClassNotFound:
        pass
    try:
        return get_lexer_for_filename(f"snippet.{name}")
    except ClassNotFound:
        return None


def guess_language(code: str) -> str:
    """A language for a fence that names none, only where telling is cheap and sure: a `#!`
    line, or a JSON document. Pygments' own guesser is neither (it loads every lexer, over a
    second, and calls Python code 'TeraTerm'), so it is not used."""
    if len(code) > MAX_GUESS_CHARS:
        return ""
    first = code.lstrip("\n").split("\n", 1)[0]
    match = _SHEBANG.match(first)
    if match:
        name = re.sub(r"[\d.]+$", "", match["name"])  # python3.12 -> python
        name = _INTERPRETERS.get(name, name)
        return name if lexer_for_language(name) is not None else ""
    stripped = code.strip()
    if stripped[:1] in "{[" and stripped[-1:] in "}]":
        try:
            json.loads(stripped)
        except ValueError:
            return ""
        return "json"
    return ""


def extension_for(language: str) -> str:
    """The file extension for code in `language` ('.py'), '.txt' when none is known."""
    lexer = lexer_for_language(language) if language else None
    for pattern in lexer.filenames if lexer is not None else ():
        if pattern.startswith("*.") and re.fullmatch(r"\*\.[\w+-]+", pattern):
            return pattern[1:]
    return ".txt"


class CodeStyle:
    """A Pygments style as Qt character formats, one per token type, made when first used."""

    def __init__(self, dark: bool) -> None:
        from pygments.styles import get_style_by_name

        self.dark = dark
        self.name = DARK_STYLE if dark else LIGHT_STYLE
        self._style = get_style_by_name(self.name)
        self._formats: dict[Any, QTextCharFormat | None] = {}
        # The theme's code fill and text behind the style's colours (the stylesheet gives the
        # same; without it, the palette does).
        roles = colours(Scheme.DARK if dark else Scheme.LIGHT)
        self.background = QColor(roles.code_fill)
        self.foreground = QColor(roles.text)

    def format(self, token: Any) -> QTextCharFormat | None:
        """The format for a token type; None when the style leaves it plain."""
        if token in self._formats:
            return self._formats[token]
        spec = self._style.style_for_token(token)
        fmt: QTextCharFormat | None = None
        if spec["color"] or spec["bold"] or spec["italic"] or spec["underline"]:
            fmt = QTextCharFormat()
            if spec["color"]:
                fmt.setForeground(QColor(f"#{spec['color']}"))
            if spec["bold"]:
                fmt.setFontWeight(QFont.Weight.Bold)
            if spec["italic"]:
                fmt.setFontItalic(True)
            if spec["underline"]:
                fmt.setFontUnderline(True)
        self._formats[token] = fmt
        return fmt


@cache
def code_style(dark: bool) -> CodeStyle:
    """One CodeStyle for each of dark and light, shared by every block."""
    return CodeStyle(dark)


class _Job:
    """Lexing `text[start:]` for one highlighter, resumable between slices."""

    def __init__(self, owner: CodeHighlighter, text: str, start: int, whole: bool) -> None:
        self.owner = owner
        self.text = text
        self.start = start
        self.whole = whole
        self.line_starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]
        self.first_line = bisect.bisect_right(self.line_starts, start) - 1
        self.lines: dict[int, LineFormats] = {}
        self.done_line = self.first_line  # lines before this one are complete
        assert owner.lexer is not None
        self._tokens: Iterator[tuple[int, Any, str]] = owner.lexer.get_tokens_unprocessed(
            text[start:]
        )

    def run(self, deadline: float) -> bool:
        """Lex until `deadline` (perf_counter seconds); True once the text is done."""
        style = self.owner.style
        for count, (index, token, value) in enumerate(self._tokens, start=1):
            fmt = style.format(token)
            offset = self.start + index
            line = bisect.bisect_right(self.line_starts, offset) - 1
            column = offset - self.line_starts[line]
            self.done_line = line
            if fmt is not None:
                for piece in value.split("\n"):
                    if piece:
                        self.lines.setdefault(line, []).append((column, len(piece), fmt))
                    line, column = line + 1, 0
            if count % 16 == 0 and time.perf_counter() >= deadline:
                self.owner.apply(self, complete=False)
                return False
        self.done_line = len(self.line_starts)
        self.owner.apply(self, complete=True)
        return True


class _Queue(QObject):
    """Every block's lexing job, run round-robin a slice at a time on a timer."""

    def __init__(self) -> None:
        super().__init__()
        self.jobs: list[_Job] = []
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(SLICE_GAP_MS)
        self.timer.timeout.connect(self._run)

    def add(self, job: _Job) -> None:
        self.drop(job.owner)
        self.jobs.append(job)
        if not self.timer.isActive():
            self.timer.start()

    def drop(self, owner: CodeHighlighter) -> None:
        self.jobs = [j for j in self.jobs if j.owner is not owner]

    def busy(self, owner: CodeHighlighter) -> bool:
        return any(j.owner is owner for j in self.jobs)

    def _run(self) -> None:
        self.run_for(SLICE_MS / 1000)
        if self.jobs:
            self.timer.start()

    def run_for(self, seconds: float) -> None:
        deadline = time.perf_counter() + seconds
        while self.jobs and time.perf_counter() < deadline:
            job = self.jobs.pop(0)
            # A block closed meanwhile (a new chat, a regenerate) took its highlighter along.
            if isValid(job.owner) and not job.run(deadline):
                self.jobs.append(job)


_queue: _Queue | None = None


def _the_queue() -> _Queue:
    global _queue
    if _queue is None:
        _queue = _Queue()
    return _queue


def run_pending(within_s: float = 5.0) -> None:
    """Lex every queued block to the end now (tests, and a save that wants exact colours)."""
    _the_queue().run_for(within_s)


class CodeHighlighter(QSyntaxHighlighter):
    """Colours a code block's document from the formats its lexing jobs found."""

    def __init__(self, document: QTextDocument, dark: bool) -> None:
        super().__init__(document)
        self.style = code_style(dark)
        self.lexer: Lexer | None = None
        self.language = ""
        self.formats: dict[int, LineFormats] = {}
        self._text = ""
        self._closed = False
        self._settled = 0  # a streaming pass lexes from here on
        self._pass = QTimer(self)
        self._pass.setSingleShot(True)
        self._pass.setInterval(STREAM_PASS_MS)
        self._pass.timeout.connect(self._stream_pass)

    def set_dark(self, dark: bool) -> None:
        if dark == self.style.dark:
            return
        self.style = code_style(dark)
        self.formats.clear()
        self.rehighlight()
        self._lex_whole()

    def update_code(self, text: str, language: str, *, closed: bool) -> None:
        """The block's text as it is now (a continuation of the last or not)."""
        restart = not text.startswith(self._text) or language != self.language
        if language != self.language or self.lexer is None:
            self.language = language
            self.lexer = lexer_for_language(language) if language else None
        if restart:
            self._settled = 0
            if self.formats:
                self.formats.clear()
                self.rehighlight()
        grew = text != self._text
        newly_closed = closed and not self._closed
        self._text, self._closed = text, closed
        if self.lexer is None or len(text) > MAX_HIGHLIGHT_CHARS:
            _the_queue().drop(self)
            return
        if closed:
            if grew or newly_closed or restart:
                self._pass.stop()
                self._lex_whole()
        elif grew and not self._pass.isActive():
            self._pass.start()

    def _lex_whole(self) -> None:
        if self.lexer is not None and self._text:
            _the_queue().add(_Job(self, self._text, 0, whole=True))

    def _stream_pass(self) -> None:
        if self._closed or self.lexer is None or _the_queue().busy(self):
            if not self._closed and self.lexer is not None:
                self._pass.start()  # the last pass is still running: try again later
            return
        end = self._text.rfind("\n") + 1  # complete lines only
        if end <= self._settled:
            return
        start = self._settled
        if end - start > STREAM_WINDOW_CHARS:
            start = self._text.rfind("\n", 0, end - STREAM_WINDOW_CHARS) + 1
        _the_queue().add(_Job(self, self._text[:end], start, whole=False))
        self._settled = self._restart_line(start, end)

    def _restart_line(self, start: int, end: int) -> int:
        """Where the next pass may begin: the last top-level line after a blank line (the
        lexer is most likely in its first state there); else where this pass began."""
        found = self._text.rfind("\n\n", start, end - 1)
        while found >= 0:
            line = found + 2
            if line < end and not self._text[line].isspace():
                return line
            found = self._text.rfind("\n\n", start, found)
        return start

    def apply(self, job: _Job, *, complete: bool) -> None:
        """Take the formats of the lines `job` finished; repaint those that changed."""
        if job.text != self._text[: len(job.text)]:
            return  # the block was replaced meanwhile
        last = job.done_line if not complete else len(job.line_starts)
        changed: list[int] = []
        for line in range(job.first_line, last):
            found = job.lines.get(line, [])
            if line == job.first_line and job.start > job.line_starts[line]:
                continue  # a line cut by the window keeps what it had
            if self.formats.get(line, []) != found:
                if found:
                    self.formats[line] = found
                else:
                    self.formats.pop(line, None)
                changed.append(line)
        job.first_line = max(job.first_line, last)
        document = self.document()
        if len(changed) * 4 >= document.blockCount():
            # Most of the block: one pass lays the document out once, not once a line.
            self.rehighlight()
            return
        for line in changed:
            block = document.findBlockByNumber(line)
            if block.isValid():
                self.rehighlightBlock(block)

    def highlightBlock(self, text: str) -> None:
        for column, length, fmt in self.formats.get(self.currentBlock().blockNumber(), ()):
            self.setFormat(column, length, fmt)

    def html(self) -> str:
        """The block as HTML with the colours shown (for tests and rich copies)."""
        from html import escape

        out: list[str] = []
        for number, line in enumerate(self._text.split("\n")):
            pos = 0
            for column, length, fmt in sorted(self.formats.get(number, []), key=lambda f: f[0]):
                if column < pos:
                    continue
                out.append(escape(line[pos:column]))
                color = fmt.foreground().color().name()
                weight = "font-weight:bold;" if fmt.fontWeight() >= QFont.Weight.Bold else ""
                piece = escape(line[column : column + length])
                out.append(f'<span style="color:{color};{weight}">{piece}</span>')
                pos = column + length
            out.append(escape(line[pos:]) + "\n")
        return f"<pre>{''.join(out).removesuffix(chr(10))}</pre>"
