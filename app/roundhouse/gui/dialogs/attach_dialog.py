"""Attach a server Roundhouse does not run (LM Studio, Jan, exo, another machine) by its URL."""

from __future__ import annotations

from urllib.parse import urlsplit

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.instances import AddEndpointRequest, InstanceInfo
from roundhouse.base.hosts import key_sent_in_clear
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge


def url_problem(text: str) -> str | None:
    """Why `text` is not a server's URL yet, in words; None when it can be sent."""
    if not text:
        return "Type the server's address, such as http://127.0.0.1:1234."
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "The address starts with http:// or https:// and names a host."
    return None


def key_warning(url: str, key: str) -> str | None:
    """Why a key given for this URL is at risk, before it is sent; None when it is not."""
    if not key or url_problem(url) or not key_sent_in_clear(url):
        return None
    return (
        "This key would travel in clear text: the address is plain http:// to another "
        "machine, so anyone on the network between can read it and your prompts. Use the "
        "server's https:// address, or an SSH tunnel to 127.0.0.1."
    )


class AttachDialog(QDialog):
    """The daemon checks the server answers (and the key works) before it keeps it; a refusal
    is shown here and the dialog stays open to correct it."""

    attached = Signal(object)  # InstanceInfo

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self._call: Call | None = None
        self.failure: Failure | None = None
        self.setWindowTitle("Attach a server")
        self.setMinimumWidth(520)
        intro = QLabel(
            "Roundhouse lists an OpenAI-compatible server that runs elsewhere (LM Studio, Jan, "
            "LocalAI, exo's cluster at http://127.0.0.1:52415, another machine) with its "
            "models. It never starts or stops it."
        )
        intro.setWordWrap(True)
        self.url_edit = QLineEdit()
        self.url_edit.setPlaceholderText("http://127.0.0.1:1234")
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setPlaceholderText("only if the server asks for one")
        self.key_edit.setToolTip(
            "Kept in the system keyring (without one, in a file only you can read)"
        )
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("optional: how Roundhouse lists it")
        self.presets_box = QCheckBox("May serve the models my presets start")
        self.presets_box.setToolTip(
            "Off: a request for a model one of your presets starts never goes to this server; "
            "the gateway starts that model itself. Change it later from the row's menu."
        )
        self.warning_label = QLabel()
        self.warning_label.setObjectName("formWarning")
        self.warning_label.setWordWrap(True)
        self.warning_label.hide()
        self.problem_label = QLabel()
        self.problem_label.setObjectName("formProblem")
        self.problem_label.setWordWrap(True)
        self.error_label = QLabel()
        self.error_label.setObjectName("dialogError")
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.hide()
        form = QFormLayout()
        form.addRow("URL:", self.url_edit)
        form.addRow("API key:", self.key_edit)
        form.addRow("Name:", self.name_edit)
        form.addRow("", self.presets_box)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.attach_button = QPushButton("Attach")
        self.attach_button.setDefault(True)
        buttons.addButton(self.attach_button, QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.accepted.connect(self.attach)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.problem_label)
        layout.addWidget(self.warning_label)
        layout.addWidget(self.error_label)
        layout.addWidget(buttons)
        self.url_edit.textChanged.connect(self._check)
        self.key_edit.textChanged.connect(self._check)
        self._check()

    def request(self) -> AddEndpointRequest:
        return AddEndpointRequest(
            url=self.url_edit.text().strip(),
            api_key=self.key_edit.text() or None,
            name=self.name_edit.text().strip() or None,
            may_serve_presets=self.presets_box.isChecked(),
        )

    def attach(self) -> None:
        if self._call is not None or url_problem(self.url_edit.text().strip()):
            return
        self.error_label.hide()
        self.attach_button.setEnabled(False)
        self.attach_button.setText("Checking…")
        self._call = call = self._bridge.add_endpoint(self.request())
        self._ops.run(call, self._on_attach_succeeded, on_failure=self._on_attach_failed)

    def error_text(self) -> str:
        return self.error_label.text() if not self.error_label.isHidden() else ""

    def _check(self) -> None:
        problem = url_problem(self.url_edit.text().strip())
        self.problem_label.setText(problem or "")
        self.problem_label.setVisible(problem is not None)
        warning = key_warning(self.url_edit.text().strip(), self.key_edit.text())
        self.warning_label.setText(warning or "")
        self.warning_label.setVisible(warning is not None)
        self.attach_button.setEnabled(problem is None and self._call is None)

    def _on_attach_succeeded(self, info: InstanceInfo) -> None:
        self._call = None
        self.attached.emit(info)
        self.accept()

    def _on_attach_failed(self, failure: Failure) -> None:
        self._call = None
        self.failure = failure
        self.error_label.setText(str(failure))
        self.error_label.show()
        self.attach_button.setText("Attach")
        self._check()
        if failure.status in (401, 403, 422) and "key" in failure.detail.lower():
            self.key_edit.setFocus()
            self.key_edit.selectAll()
