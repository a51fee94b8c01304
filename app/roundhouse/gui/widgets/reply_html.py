"""A reply's Markdown as rich text that fetches nothing: no raw HTML, images as link text.

Qt's own Markdown in a label takes raw HTML from the reply and loads `<img>` and `![]()`
sources when it lays them out: a local file, or on Windows a share (`\\\\host\\share\\x.png`,
which hands the user's Windows sign-in to that host). Here the Markdown is parsed with raw
HTML shown as text, every image becomes a link-like "[image: ALT]" (its address then goes
through the link policy like any link), and the document refuses to load anything.
"""

from __future__ import annotations

from PySide6.QtCore import QUrl
from PySide6.QtGui import (
    QFont,
    QGuiApplication,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextImageFormat,
)
from PySide6.QtWidgets import QTextBrowser

_FEATURES = (
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub
    | QTextDocument.MarkdownFeature.MarkdownNoHTML
)


class LocalOnlyDocument(QTextDocument):
    """A document that loads no resource it was not given (addResource): no file, no
    share, no web address."""

    def loadResource(self, type: int, name: QUrl | str) -> object:
        return None


class LocalOnlyBrowser(QTextBrowser):
    """A text browser that loads no resource it was not given, as LocalOnlyDocument."""

    def loadResource(self, type: int, name: QUrl | str) -> object:
        return None


def image_words(alt: str) -> str:
    """What an image in a reply shows instead of itself."""
    return f"[image: {alt}]" if alt else "[image]"


def reply_html(markdown: str, font: QFont) -> str:
    """`markdown` as HTML for a rich-text label: raw HTML as text, images as link text."""
    document = LocalOnlyDocument()
    document.setDefaultFont(font)
    document.setMarkdown(markdown, _FEATURES)
    _replace_images(document)
    return document.toHtml()


def _replace_images(document: QTextDocument) -> None:
    found: list[tuple[int, int, QTextImageFormat]] = []
    block = document.begin()
    while block.isValid():
        fragments = block.begin()
        while not fragments.atEnd():
            fragment = fragments.fragment()
            if fragment.charFormat().isImageFormat():
                image = fragment.charFormat().toImageFormat()
                found.append((fragment.position(), fragment.length(), image))
            fragments += 1
        block = block.next()
    # From the end: a replacement changes the positions after it, not before.
    for position, length, image in reversed(found):
        cursor = QTextCursor(document)
        cursor.setPosition(position)
        cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
        alt = image.property(QTextFormat.Property.ImageAltText)
        words = image_words(alt if isinstance(alt, str) else "")
        href = image.name()  # Qt keeps no outer link on an image: its own address
        shown = QTextCharFormat()
        if href:
            shown.setAnchor(True)
            shown.setAnchorHref(href)
            shown.setForeground(QGuiApplication.palette().link())
            shown.setFontUnderline(True)
        cursor.insertText(" ".join([words] * length), shown)
