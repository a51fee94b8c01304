"""Split a reply's Markdown into prose and fenced code, so each can be shown its own way.

Qt-free and incremental: while a reply streams, every segment but the last is final, so the
view re-parses only the growing tail. A fence is recognised on a complete line only (until
the text is final), which keeps the segments before the last from changing under the reader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

# Any indentation: models indent fences inside list items, where CommonMark allows it too.
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)$")
# Prose is cut at a paragraph break once it holds this much, so a long answer without code
# is not re-parsed whole at every repaint while it streams.
MAX_TEXT_CHARS = 2000


class SegmentKind(StrEnum):
    TEXT = "text"
    CODE = "code"


@dataclass(frozen=True)
class Segment:
    """A run of prose (Markdown) or the body of one fenced code block."""

    kind: SegmentKind
    text: str
    # Where the segment's source starts and ends in the whole text (fences included).
    start: int
    end: int
    language: str = ""
    # False for a code block whose closing fence has not come (yet).
    closed: bool = True


def _lines(text: str, start: int) -> list[tuple[int, str, bool]]:
    """(offset, line without its newline, whether the newline came) from `start` on."""
    out: list[tuple[int, str, bool]] = []
    offset = start
    while offset < len(text):
        newline = text.find("\n", offset)
        if newline < 0:
            out.append((offset, text[offset:], False))
            break
        out.append((offset, text[offset:newline], True))
        offset = newline + 1
    return out


def _dedent(line: str, indent: int) -> str:
    """Remove up to `indent` leading spaces or tabs (the fence's own indentation)."""
    cut = 0
    while cut < indent and cut < len(line) and line[cut] in " \t":
        cut += 1
    return line[cut:]


def split_markdown(
    text: str, *, start: int = 0, final: bool = True, max_text_chars: int = MAX_TEXT_CHARS
) -> list[Segment]:
    """The segments of `text[start:]`, in order; `start` must be a segment's start.

    Not `final` (still streaming): an unfinished last line opens or closes no fence.
    Empty prose between blocks is left out.
    """
    segments: list[Segment] = []
    text_start = start
    text_lines: list[str] = []
    code: tuple[int, str, str, int, list[str]] | None = None  # start, fence, lang, indent, lines

    def flush_text(end: int) -> None:
        body = "\n".join(text_lines)
        if body.strip():
            segments.append(Segment(SegmentKind.TEXT, body, text_start, end))
        text_lines.clear()

    for offset, line, complete in _lines(text, start):
        may_fence = complete or final
        match = _FENCE.match(line) if may_fence else None
        if code is not None:
            code_start, fence, language, indent, body = code
            closing = match is not None and not match["info"].strip()
            if closing and match is not None and match["fence"].startswith(fence):
                end = offset + len(line) + (1 if complete else 0)
                segments.append(
                    Segment(SegmentKind.CODE, "\n".join(body), code_start, end, language)
                )
                code, text_start = None, end
            elif complete or final or line.strip().strip(fence[0]):
                # (An unfinished last line of fence characters is likely the closing fence
                # arriving: not shown as code in the meantime.)
                body.append(_dedent(line, indent))
            continue
        opening = match is not None and not (match["fence"][0] == "`" and "`" in match["info"])
        if opening and match is not None:
            flush_text(offset)
            language = match["info"].strip().split(" ")[0] if match["info"].strip() else ""
            code = (offset, match["fence"], language, len(match["indent"]), [])
            continue
        at_break = complete and not line.strip()
        if at_break and sum(len(t) + 1 for t in text_lines) >= max_text_chars:
            flush_text(offset)
            text_start = offset
            text_lines.append(line)
            continue
        text_lines.append(line)
    if code is not None:
        code_start, _fence, language, _indent, body = code
        segments.append(
            Segment(SegmentKind.CODE, "\n".join(body), code_start, len(text), language, False)
        )
    else:
        flush_text(len(text))
    return segments


class SegmentedText:
    """The segments of a growing text; `update` re-parses from the last segment's start only.

    `stable` counts the leading segments that can no longer change: a view keeps their
    widgets and rebuilds only what follows.
    """

    def __init__(self, *, max_text_chars: int = MAX_TEXT_CHARS) -> None:
        self.max_text_chars = max_text_chars
        self.text = ""
        self.segments: list[Segment] = []
        self.stable = 0

    def update(self, text: str, *, final: bool = False) -> list[Segment]:
        """Take the whole text as it is now; returns the segments from index `stable` on."""
        if not text.startswith(self.text):
            # Not a continuation (an edit, a regenerated reply): start over.
            self.segments, self.stable = [], 0
        self.text = text
        resume = self.segments[self.stable].start if self.stable < len(self.segments) else None
        if resume is None:
            resume = self.segments[-1].end if self.segments else 0
        kept = self.segments[: self.stable]
        tail = split_markdown(text, start=resume, final=final, max_text_chars=self.max_text_chars)
        self.segments = kept + tail
        first_changed = self.stable
        # All but the last are final while streaming; everything is once the text is.
        self.stable = len(self.segments) if final else max(len(self.segments) - 1, 0)
        return self.segments[first_changed:]
