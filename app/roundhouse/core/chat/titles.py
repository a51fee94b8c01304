"""A conversation's title when the user gave none: the first line of its first message."""

from __future__ import annotations

DEFAULT_TITLE = "New chat"
TITLE_CHARS = 60


def title_from(first_message: str | None) -> str:
    """The first non-empty line, spaces collapsed, cut at a word near TITLE_CHARS."""
    for line in (first_message or "").splitlines():
        words = " ".join(line.split())
        if not words:
            continue
        if len(words) <= TITLE_CHARS:
            return words
        cut = words[: TITLE_CHARS - 1]
        # Cut at the last space unless that throws away most of the line (one long word).
        space = cut.rfind(" ")
        if space >= TITLE_CHARS // 2:
            cut = cut[:space]
        return cut.rstrip(" ,;:.-") + "…"
    return DEFAULT_TITLE
