"""Secrets masked before a screenshot is taken: a generated gateway key, a token, an endpoint
key must never reach a PNG in the repository, even a throwaway one (it reads as a real key).

Every visible text field and label whose text holds something shaped like a key
(`rh-…`, `hf_…`, `sk-…` with 16 or more key characters) shows a fixed mask instead while the
screen is grabbed; then its text is put back. Fields in password mode show dots already. A
key left anywhere else on screen (a text view, a button) stops the script, so a new
screenshot cannot leak one unnoticed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from PySide6.QtWidgets import (
    QAbstractButton,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)

# The gateway's keys (rh-), Hugging Face tokens (hf_), OpenAI-style endpoint keys (sk-).
SECRET = re.compile(r"\b(rh-|hf_|sk-)[A-Za-z0-9_\-]{16,}")
MASK = "••••••••••••••••"

Masked = list[tuple[QLineEdit | QLabel, str]]


def masked_text(text: str) -> str:
    """`text` with every key in it replaced by its prefix and a fixed mask."""
    return SECRET.sub(lambda found: found.group(1) + MASK, text)


def mask_secrets(windows: Iterable[QWidget]) -> Masked:
    """Mask the keys shown in the fields and labels of `windows`; what to put back."""
    changed: Masked = []
    for widget in _shown(windows, (QLineEdit, QLabel)):
        assert isinstance(widget, QLineEdit | QLabel)
        if isinstance(widget, QLineEdit) and widget.echoMode() != QLineEdit.EchoMode.Normal:
            continue
        text = widget.text()
        if SECRET.search(text):
            changed.append((widget, text))
            widget.setText(masked_text(text))
    return changed


def restore(changed: Masked) -> None:
    for widget, text in changed:
        widget.setText(text)


def shown_secrets(windows: Iterable[QWidget]) -> list[str]:
    """Where a key is still on screen: 'ClassName: text' for each widget that shows one."""
    found: list[str] = []
    kinds = (QLineEdit, QLabel, QPlainTextEdit, QTextEdit, QAbstractButton)
    for widget in _shown(windows, kinds):
        if isinstance(widget, QLineEdit) and widget.echoMode() != QLineEdit.EchoMode.Normal:
            continue
        if isinstance(widget, QPlainTextEdit | QTextEdit):
            text = widget.toPlainText()
        else:
            text = widget.text()  # type: ignore[attr-defined]
        if SECRET.search(text):
            found.append(f"{type(widget).__name__}: {text[:80]}")
    return found


def _shown(windows: Iterable[QWidget], kinds: tuple[type[QWidget], ...]) -> list[QWidget]:
    widgets: list[QWidget] = []
    for window in windows:
        if not window.isVisible():
            continue
        for kind in kinds:
            widgets += [w for w in window.findChildren(kind) if w.isVisible()]
            if isinstance(window, kind):
                widgets.append(window)
    return widgets
