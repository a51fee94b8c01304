"""Opening a link from a reply: the whole address first, then the browser; or why not."""

from __future__ import annotations

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QMessageBox, QWidget

from roundhouse.gui.link_policy import WEB_SCHEMES, LinkDecision, decide_link

OPEN = "Open"


def link_tooltip(href: str) -> str:
    """What hovering a link says: where it goes, or that it will not open."""
    decision = _checked(decide_link(href))
    if decision.allowed:
        return decision.address
    return f"Not opened from chat: {decision.reason}"


def ask_to_open(parent: QWidget, href: str) -> QMessageBox:
    """A box showing the whole address with Open (to the browser) and Cancel, or saying why
    the link is not opened. Plain text: an address is never read as HTML. open(), not
    exec(): a nested event loop would stall qasync's tasks."""
    decision = _checked(decide_link(href))
    box = QMessageBox(parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    if decision.allowed:
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle("Open a link")
        box.setText(f"Open this address in your browser?\n\n{decision.address}")
        opener = box.addButton(OPEN, QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    else:
        box.setIcon(QMessageBox.Icon.Information)
        box.setWindowTitle("Link not opened")
        box.setText(f"Roundhouse does not open this link.\n\n{decision.reason}")
        opener = None
        box.addButton(QMessageBox.StandardButton.Ok)

    def on_finished() -> None:
        clicked = box.clickedButton()
        box.deleteLater()
        if opener is not None and clicked is opener:
            QDesktopServices.openUrl(QUrl(decision.href, QUrl.ParsingMode.StrictMode))

    box.finished.connect(on_finished)
    box.open()
    return box


def _checked(decision: LinkDecision) -> LinkDecision:
    """The decision, refused after all where Qt reads the address otherwise: what opens is
    Qt's reading of it, so that must be a web address with a server too."""
    if not decision.allowed:
        return decision
    url = QUrl(decision.href, QUrl.ParsingMode.StrictMode)
    if url.isValid() and url.scheme().lower() in WEB_SCHEMES and url.host():
        return decision
    return LinkDecision(decision.href, False, reason="The link's address is not valid.")
