"""The mouse wheel scrolls pages, never the value of a spin box or combo box it passes over."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QWidget,
)

# Both change their value on a wheel turn and, by default, take the focus from it as well
# (Qt.WheelFocus): scrolling a form moved whatever field passed under the pointer.
GUARDED = (QAbstractSpinBox, QComboBox)


class WheelGuard(QObject):
    """An application-wide event filter: one place for every page and dialog.

    A guarded widget takes the focus only by click or Tab (StrongFocus), and the wheel
    changes its value only while it has the focus; otherwise the turn goes to the scroll
    area around it, so the page scrolls as if the field were not there."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.Polish and isinstance(watched, GUARDED):
            guard_focus(watched)
        elif kind == QEvent.Type.Wheel and isinstance(watched, GUARDED) and not watched.hasFocus():
            _scroll_around(watched, event)
            return True
        return False


def guard_focus(widget: QWidget) -> None:
    """No focus from the wheel (Qt gives it before any filter sees the event)."""
    if widget.focusPolicy() == Qt.FocusPolicy.WheelFocus:
        widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)


def _scroll_around(widget: QWidget, event: QEvent) -> None:
    """Hand the turn to the nearest scroll area around the widget; none: it goes nowhere."""
    parent = widget.parentWidget()
    while parent is not None and not isinstance(parent, QAbstractScrollArea):
        parent = parent.parentWidget()
    if parent is not None:
        # The viewport is what a scroll area scrolls by; sent, not posted: this very event.
        QApplication.sendEvent(parent.viewport(), event)
    event.accept()


def install_wheel_guard(app: QApplication) -> WheelGuard:
    """Install the guard once per application (later calls return the same one)."""
    existing = app.findChild(WheelGuard)
    if isinstance(existing, WheelGuard):
        return existing
    guard = WheelGuard(app)
    app.installEventFilter(guard)
    # Widgets polished before the guard was there (the main window's, built first).
    for widget in app.allWidgets():
        if isinstance(widget, GUARDED):
            guard_focus(widget)
    return guard
