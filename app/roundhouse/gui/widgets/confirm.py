"""Ask before a destructive action, without a nested event loop."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QMessageBox, QWidget


def ask_to_confirm(
    parent: QWidget,
    *,
    title: str,
    text: str,
    detail: str,
    action: str,
    on_confirm: Callable[[], None],
    on_closed: Callable[[], None],
) -> QMessageBox:
    """Open a warning with `action` (destructive) and Cancel, Cancel the default.

    `on_closed` runs when the box closes, however; `on_confirm` after it when the user chose
    `action`. open(), not exec(): a nested event loop would stall qasync's tasks.
    """
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle(title)
    box.setText(text)
    box.setInformativeText(detail)
    confirm = box.addButton(action, QMessageBox.ButtonRole.DestructiveRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)

    def on_finished() -> None:
        clicked = box.clickedButton()
        box.deleteLater()
        on_closed()
        if clicked is confirm:
            on_confirm()

    box.finished.connect(on_finished)
    box.open()
    return box
