"""A model card's summary: its first paragraphs as plain text, bounded (pure)."""

from __future__ import annotations

import html
import re

MAX_SUMMARY_CHARS = 800
_MAX_PARAGRAPHS = 3
_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n.*?\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
_FENCE = re.compile(r"^(```|~~~)")
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_REF_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_AUTOLINK = re.compile(r"<(https?://[^>]+)>")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_EMPHASIS = re.compile(r"(\*{1,3}|_{1,3}|~~)(?=\S)(.+?)(?<=\S)\1")
_CODE = re.compile(r"`+([^`]*)`+")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_SPACES = re.compile(r"\s+")


def strip_front_matter(text: str) -> str:
    """The card without its YAML header (`---` ... `---`)."""
    return _FRONT_MATTER.sub("", text, count=1)


def card_summary(readme: str, limit: int = MAX_SUMMARY_CHARS) -> str:
    """The first prose paragraphs of a README, as plain text of at most `limit` characters.

    Headings, code, tables, badges, images, rules and HTML-only blocks are skipped; links
    keep their words; the cut falls on a word boundary and ends with an ellipsis.
    """
    paragraphs: list[str] = []
    total = 0
    for block in _blocks(strip_front_matter(_COMMENT.sub("", readme))):
        text = _plain(block)
        if len(text) < 2 or not any(ch.isalnum() for ch in text):
            continue
        paragraphs.append(text)
        total += len(text)
        if len(paragraphs) >= _MAX_PARAGRAPHS or total >= limit:
            break
    return _cut("\n\n".join(paragraphs), limit)


def _blocks(body: str) -> list[str]:
    """Blank-line separated blocks of prose; code fences, headings, tables and rules dropped."""
    blocks: list[str] = []
    current: list[str] = []
    fenced = False
    for raw in body.splitlines():
        line = raw.rstrip()
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
            _flush(current, blocks)
            continue
        if fenced:
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "|")) or _RULE.match(stripped):
            _flush(current, blocks)
            continue
        if stripped.startswith(">"):
            stripped = stripped.lstrip("> ")
        if stripped.startswith(("- ", "* ", "+ ")):
            stripped = "• " + stripped[2:]
        current.append(stripped)
    _flush(current, blocks)
    return blocks


def _flush(current: list[str], blocks: list[str]) -> None:
    if current:
        blocks.append("\n".join(current))
        current.clear()


def _plain(block: str) -> str:
    text = _IMAGE.sub("", block)
    text = _LINK.sub(r"\1", text)
    text = _REF_LINK.sub(r"\1", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _TAG.sub(" ", text)
    text = _CODE.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\2", text)
    text = html.unescape(text)
    lines = [_SPACES.sub(" ", line).strip() for line in text.splitlines()]
    # Prose wrapped over lines is one paragraph; list items keep a line each.
    out = ""
    for line in filter(None, lines):
        joiner = "\n" if line.startswith("• ") else " "
        out = f"{out}{joiner}{line}" if out else line
    return out


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-—\n") + "…"
