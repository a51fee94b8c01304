"""The Hugging Face section of the Settings page: set, replace or forget the token, and whose
it is. Each action is the daemon's at once (it checks the token with the Hub and keeps it in
the system keyring); the token never comes back from the daemon, only whose it is."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.hub import HubTokenSource, HubTokenStatus
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.widgets.confirm import ask_to_confirm
from roundhouse.gui.widgets.settings_path_list import hint

TOKENS_PAGE = "https://huggingface.co/settings/tokens"
TOKEN_HINT = (
    f'Gated and private models need a token of your account (<a href="{TOKENS_PAGE}">create '
    'one</a>; "read" access is enough). Saved at once, in the system keyring (without one, in '
    "a file only you can read); not with the page's Save."
)


class HubTokenSection(QGroupBox):
    """The token's state is read (and checked with the Hub) the first time it is shown."""

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__("Hugging Face", parent)
        self._calls = ModelsCalls(bridge)
        self._ops = Ops(self, on_busy=self._update_buttons)
        self._connected = False
        self.status: HubTokenStatus | None = None
        self.confirm_box: QMessageBox | None = None
        self.state = QLabel("Not read yet")
        self.state.setWordWrap(True)
        self.state.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.token_edit = QLineEdit()
        self.token_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.token_edit.setPlaceholderText("hf_… (paste a token to set or replace it)")
        self.token_edit.textChanged.connect(self._update_buttons)
        self.token_edit.returnPressed.connect(self.save_token)
        self.save_button = QPushButton("Save token")
        self.save_button.clicked.connect(self.save_token)
        self.forget_button = QPushButton("Forget…")
        self.forget_button.clicked.connect(self.forget_token)
        self.error = QLabel()
        self.error.setObjectName("dialogError")
        self.error.setWordWrap(True)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.hide()
        row = QHBoxLayout()
        row.addWidget(self.token_edit, 1)
        row.addWidget(self.save_button)
        row.addWidget(self.forget_button)
        about = hint(TOKEN_HINT)
        about.setOpenExternalLinks(True)
        box = QVBoxLayout()
        box.addWidget(self.state)
        box.addLayout(row)
        box.addWidget(about)
        box.addWidget(self.error)
        form = QFormLayout(self)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        form.addRow("Token:", box)
        self._update_buttons()

    def refresh(self) -> None:
        """Read the token's state, asking the Hub whose it is."""
        self._run(self._calls.token_status(check=True), "The token's state was not read")
        self.state.setText("Asking Hugging Face whose token it is…")

    def save_token(self) -> None:
        token = self.token_edit.text().strip()
        if not token or self._ops.busy:
            return
        self._run(self._calls.set_token(token), "The token was not saved")
        self.state.setText("Checking the token with Hugging Face…")

    def forget_token(self) -> None:
        self.confirm_box = ask_to_confirm(
            self,
            title="Forget the Hugging Face token",
            text="Forget the Hugging Face token?",
            detail="Gated and private models cannot be downloaded until a token is set again. "
            "The token itself stays valid on your Hugging Face account.",
            action="Forget token",
            on_confirm=lambda: self._run(self._calls.clear_token(), "The token was not forgotten"),
            on_closed=self._on_confirm_closed,
        )

    def show_status(self, status: HubTokenStatus) -> None:
        self.status = status
        self.token_edit.clear()
        self.state.setText(status.message)
        self.save_button.setText("Replace token" if status.present else "Save token")
        self._update_buttons()

    def state_text(self) -> str:
        return self.state.text()

    def error_text(self) -> str:
        return "" if self.error.isHidden() else self.error.text()

    def set_connected(self, connected: bool) -> None:
        self._connected = connected
        self._update_buttons()

    def _run(self, call: Call, what: str) -> None:
        self.error.hide()
        self._ops.run(
            call, self.show_status, on_failure=lambda failure: self._fail(what, failure), busy=True
        )

    def _fail(self, what: str, failure: Failure) -> None:
        # A refused token stays typed, beside the reason.
        self.state.setText(self.status.message if self.status else "")
        self.error.setText(f"<b>{html.escape(what)}</b>: {html.escape(str(failure))}")
        self.error.show()

    def _on_confirm_closed(self) -> None:
        self.confirm_box = None

    def _update_buttons(self) -> None:
        idle = self._connected and not self._ops.busy
        self.save_button.setEnabled(idle and bool(self.token_edit.text().strip()))
        # A token from HF_TOKEN or `hf auth login` is not Roundhouse's to forget.
        stored = self.status is not None and self.status.source == HubTokenSource.KEYRING
        self.forget_button.setEnabled(idle and stored)
        self.token_edit.setEnabled(not self._ops.busy)
