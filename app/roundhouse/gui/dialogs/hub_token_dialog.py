"""Set or remove the Hugging Face token: typed hidden, stored by the daemon in the keyring."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.hub import HubTokenSource, HubTokenStatus
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.op import Ops

TOKENS_PAGE = "https://huggingface.co/settings/tokens"


class HubTokenDialog(QDialog):
    """Save checks the token with the Hub first; a refused one stays typed, with the reason."""

    token_changed = Signal(object)  # HubTokenStatus

    def __init__(
        self,
        calls: ModelsCalls,
        status: HubTokenStatus | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._calls = calls
        self._call: Call | None = None
        self.setWindowTitle("Hugging Face token")
        self.setMinimumWidth(480)
        intro = QLabel(
            "Gated and private models need a token from your Hugging Face account "
            f'(<a href="{TOKENS_PAGE}">create one</a>; "read" access is enough). '
            "The daemon keeps it in the system keyring (on a machine without one, in a file "
            "only you can read)."
        )
        intro.setWordWrap(True)
        intro.setOpenExternalLinks(True)
        self.status_label = QLabel()
        self.status_label.setObjectName("hint")
        self.status_label.setWordWrap(True)
        self.token_edit = QLineEdit()
        self.token_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.token_edit.setPlaceholderText("hf_…")
        self.token_edit.textChanged.connect(self._update_actions)
        self.error_label = QLabel()
        self.error_label.setObjectName("dialogError")
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.hide()
        self.buttons = QDialogButtonBox()
        self.save_button = self.buttons.addButton("Save", QDialogButtonBox.ButtonRole.AcceptRole)
        self.save_button.setDefault(True)
        self.remove_button = self.buttons.addButton(
            "Remove token", QDialogButtonBox.ButtonRole.DestructiveRole
        )
        self.remove_button.clicked.connect(self.remove)
        self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.status_label)
        layout.addWidget(self.token_edit)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        self.status: HubTokenStatus | None = None
        self.show_status(status)

    def show_status(self, status: HubTokenStatus | None) -> None:
        self.status = status
        self.status_label.setText(status.message if status else "")
        self.status_label.setVisible(status is not None)
        self._update_actions()

    def save(self) -> None:
        token = self.token_edit.text().strip()
        if not token or self._call is not None:
            return
        self._send(self._calls.set_token(token), "Checking the token with Hugging Face…")

    def remove(self) -> None:
        if self._call is None:
            self._send(self._calls.clear_token(), "Removing the token…")

    def error_text(self) -> str:
        return "" if self.error_label.isHidden() else self.error_label.text()

    def _send(self, call: Call, doing: str) -> None:
        self._call = call
        self.error_label.hide()
        self.status_label.setText(doing)
        self.status_label.show()
        self._ops.run(call, self._on_call_succeeded, on_failure=self._on_call_failed)
        self._update_actions()

    def _on_call_succeeded(self, status: HubTokenStatus) -> None:
        self._call = None
        self.token_edit.clear()
        self.show_status(status)
        self.token_changed.emit(status)
        if status.valid is not False:
            self.accept()

    def _on_call_failed(self, failure: Failure) -> None:
        self._call = None
        self.show_status(self.status)
        self.error_label.setText(
            f"<b>{html.escape(failure.title)}</b><br>{html.escape(failure.detail)}"
        )
        self.error_label.show()
        self._update_actions()

    def _update_actions(self) -> None:
        idle = self._call is None
        self.save_button.setEnabled(idle and bool(self.token_edit.text().strip()))
        # A token from the environment (HF_TOKEN, `hf auth login`) is not ours to remove.
        stored = self.status is not None and self.status.source == HubTokenSource.KEYRING
        self.remove_button.setEnabled(idle and stored)
        self.token_edit.setEnabled(idle)
