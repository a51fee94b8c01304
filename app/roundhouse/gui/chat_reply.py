"""The chat pane's plain logic: a reply's text while it streams, its figures in words.

Qt-free, so unit tests read it directly."""

from __future__ import annotations

from roundhouse.api.chat import ReplyStats


class ReplyDraft:
    """A reply's text as it streams, kept as parts and joined only when the view asks.

    Deltas come thousands a second; the view asks at most a few dozen times a second.
    """

    def __init__(self, model: str) -> None:
        self.model = model
        self.deltas = 0
        self._content = ""
        self._reasoning = ""
        self._content_parts: list[str] = []
        self._reasoning_parts: list[str] = []

    def add(self, content: str, reasoning: str = "") -> None:
        self.deltas += 1
        if content:
            self._content_parts.append(content)
        if reasoning:
            self._reasoning_parts.append(reasoning)

    @property
    def content(self) -> str:
        if self._content_parts:
            self._content += "".join(self._content_parts)
            self._content_parts.clear()
        return self._content

    @property
    def reasoning(self) -> str:
        if self._reasoning_parts:
            self._reasoning += "".join(self._reasoning_parts)
            self._reasoning_parts.clear()
        return self._reasoning


def stats_line(stats: ReplyStats | None) -> str:
    """'llama.cpp · TTFT 120 ms · 57 tokens · 812 tok/s', with 'stopped' when so."""
    if stats is None:
        return ""
    parts: list[str] = []
    if stats.engine:
        parts.append(stats.engine)
    if stats.ttft_ms is not None:
        parts.append(f"TTFT {stats.ttft_ms:,.0f} ms")
    if stats.completion_tokens is not None:
        count = stats.completion_tokens
        parts.append("1 token" if count == 1 else f"{count:,} tokens")
    if stats.tokens_per_s is not None:
        parts.append(f"{stats.tokens_per_s:,.1f} tok/s")
    if stats.stopped:
        parts.append("stopped")
    return " · ".join(parts)
