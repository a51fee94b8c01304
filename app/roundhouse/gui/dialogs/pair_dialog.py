"""Pair this machine with another's daemon: show a code here, or type the one the other shows.

Either half pairs the two: the code is shown on the machine whose peer listener the other
reaches (peers.listen_host), and typed on the other (docs/machines.md)."""

from __future__ import annotations

import html
import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.peers import PairingCodeReply, PeerInfo, parse_address
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.calls.peers import PeersCalls
from roundhouse.gui.theme.roles import role_hex


def shown_fingerprint(fingerprint: str) -> str:
    """The first 32 hex digits in groups of four: what a person compares on both screens."""
    head = fingerprint[:32].upper()
    return " ".join(head[i : i + 4] for i in range(0, len(head), 4))


class PairDialog(QDialog):
    """Show a code (for the other machine to type) or type the other's code; `paired` is
    emitted with the PeerInfo of a machine paired from here."""

    paired = Signal(object)  # PeerInfo

    def __init__(self, calls: PeersCalls, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._calls = calls
        self._pairing: Call | None = None
        self.setWindowTitle("Pair a machine")
        self.setMinimumWidth(520)

        here = QGroupBox("Let another machine pair with this one")
        self.show_code_button = QPushButton("Show a pairing code")
        self.show_code_button.clicked.connect(self.show_code)
        self.code_label = QLabel()
        big = QFont(self.code_label.font())
        big.setPointSizeF(big.pointSizeF() * 1.8)
        big.setBold(True)
        self.code_label.setFont(big)
        self.code_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # How long the code shown stays valid, counted down each second.
        self.countdown_label = QLabel()
        self._expires_at = 0.0
        self._countdown = QTimer(self)
        self._countdown.setInterval(1000)
        self._countdown.timeout.connect(self._tick)
        self.code_details = QLabel()
        self.code_details.setWordWrap(True)
        self.code_details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        here_layout = QVBoxLayout(here)
        here_layout.addWidget(self.show_code_button)
        here_layout.addWidget(self.code_label)
        here_layout.addWidget(self.countdown_label)
        here_layout.addWidget(self.code_details)
        self.code_label.hide()
        self.countdown_label.hide()
        self.code_details.hide()

        there = QGroupBox("Pair with a machine that shows a code")
        self.address_edit = QLineEdit()
        self.address_edit.setPlaceholderText("192.168.1.20 or box.local:11502")
        self.code_edit = QLineEdit()
        self.code_edit.setPlaceholderText("XXXXX-XXXXX")
        self.address_edit.textChanged.connect(self._update_actions)
        self.code_edit.textChanged.connect(self._update_actions)
        self.pair_button = QPushButton("Pair")
        self.pair_button.clicked.connect(self.pair)
        form = QFormLayout(there)
        form.addRow("Address", self.address_edit)
        form.addRow("Code", self.code_edit)
        form.addRow("", self.pair_button)

        self.result_label = QLabel()
        self.result_label.setWordWrap(True)
        self.result_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.result_label.hide()
        self.error_label = QLabel()
        self.error_label.setObjectName("dialogError")
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.hide()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(here)
        layout.addWidget(there)
        layout.addWidget(self.result_label)
        layout.addWidget(self.error_label)
        layout.addWidget(buttons)
        self._update_actions()

    # -- this machine's code ---------------------------------------------------------------

    def show_code(self) -> None:
        self._clear_messages()
        self._ops.run(self._calls.open_code(), self._on_code, on_failure=self._on_failed)

    def _on_code(self, offer: PairingCodeReply) -> None:
        self.code_label.setText(offer.code)
        self._expires_at = offer.expires_at
        self._tick()
        self._countdown.start()
        minutes = max(1, round((offer.expires_at - time.time()) / 60))
        where = offer.addresses or ([offer.host] if offer.host else [])
        lines = [
            f"Valid {minutes} min, once. Type it on the other machine (its Pair a machine, or "
            f"<code>roundhouse peers add ADDRESS --code {html.escape(offer.code)}</code>).",
            f"This machine's fingerprint: <b>{shown_fingerprint(offer.fingerprint)}</b>; the "
            "other machine shows it when paired: compare them.",
        ]
        if where:
            shown = ", ".join(html.escape(f"{a}:{offer.port}") for a in where)
            lines.append(f"Address to type there: {shown}")
        if not offer.listening:
            lines.append(
                f'<span style="color:{role_hex("danger_text")}">'
                f"{html.escape(offer.error or 'Not listening.')}</span>"
            )
        self.code_details.setText("<br>".join(lines))
        self.code_label.show()
        self.countdown_label.show()
        self.code_details.show()
        self.show_code_button.setText("Show a new code")

    def _tick(self) -> None:
        left = self._expires_at - time.time()
        if left <= 0:
            self._countdown.stop()
            self.countdown_label.setText("This code has expired: show a new one.")
            return
        minutes, seconds = divmod(int(left), 60)
        self.countdown_label.setText(f"Valid for {minutes}:{seconds:02d} more, once.")

    # -- the other machine's code ----------------------------------------------------------

    def pair(self) -> None:
        if self._pairing is not None:
            return
        self._clear_messages()
        try:
            host, port = parse_address(self.address_edit.text())
        except ValueError as exc:
            self._say_error(str(exc))
            return
        code = self.code_edit.text().strip()
        self._pairing = self._calls.pair(host, port, code)
        self.result_label.setText(f"Pairing with {html.escape(host)}…")
        self.result_label.show()
        self._ops.run(self._pairing, self._on_paired, on_failure=self._on_pair_failed)
        self._update_actions()

    def _on_paired(self, peer: PeerInfo) -> None:
        self._pairing = None
        self.code_edit.clear()
        self.result_label.setText(
            f"Paired with <b>{html.escape(peer.name)}</b> (id {html.escape(peer.id)}) at "
            f"{html.escape(peer.host)}:{peer.port}.<br>Its fingerprint: "
            f"<b>{shown_fingerprint(peer.fingerprint)}</b> (the same as it showed)."
        )
        self._update_actions()
        self.paired.emit(peer)

    def _on_pair_failed(self, failure: Failure) -> None:
        self._pairing = None
        self.result_label.hide()
        self._on_failed(failure)
        self._update_actions()

    # -- shared ------------------------------------------------------------------------------

    def _on_failed(self, failure: Failure) -> None:
        self._say_error(f"<b>{html.escape(failure.title)}</b><br>{html.escape(failure.detail)}")

    def _say_error(self, text: str) -> None:
        self.error_label.setText(text)
        self.error_label.show()

    def error_text(self) -> str:
        return "" if self.error_label.isHidden() else self.error_label.text()

    def _clear_messages(self) -> None:
        self.error_label.hide()

    def _update_actions(self) -> None:
        idle = self._pairing is None
        filled = bool(self.address_edit.text().strip()) and bool(self.code_edit.text().strip())
        self.pair_button.setEnabled(idle and filled)
        self.address_edit.setEnabled(idle)
        self.code_edit.setEnabled(idle)
