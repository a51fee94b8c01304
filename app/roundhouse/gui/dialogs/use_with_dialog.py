"""Use with…: ready-to-copy settings that point coding agents, SDKs and apps at the gateway.

The words come from the same clients table `roundhouse launch` reads (roundhouse.api.clients),
filled with the daemon's address, the gateway key and the chosen model. The key is masked
until the user asks to see it; Copy always copies the real settings.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.clients import (
    PLACEHOLDER_KEY,
    ClientKind,
    ClientSpec,
    ClientTableError,
    GatewayTarget,
    client_table,
    client_text,
    mask_key,
)
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.gateway import GatewayCalls, GatewayFacts
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge

KIND_WORDS = {
    ClientKind.AGENT: "Coding agent",
    ClientKind.SDK: "SDK",
    ClientKind.APP: "App",
}
NO_KEY_NOTE = (
    "No gateway key is set: apps on this machine may send any key (“roundhouse” here). Set "
    "one in Settings › Gateway before other machines or web pages may use the gateway."
)


class UseWithDialog(QDialog):
    """A model, a list of clients and the chosen client's settings, with Copy buttons."""

    def __init__(
        self, bridge: DaemonBridge, model: str | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._bridge = bridge
        self._calls = GatewayCalls(bridge)
        self._wanted = model
        self._facts: GatewayFacts | None = None
        self._call: Call | None = None
        self.setWindowTitle("Use with…")
        self.resize(760, 520)
        try:
            self._table: dict[str, ClientSpec] = client_table()
        except ClientTableError as exc:
            self._table = {}
            self._table_error: str | None = str(exc)
        else:
            self._table_error = None

        self.model_combo = QComboBox()
        self.model_combo.setToolTip("The model the settings name")
        self.clients = QListWidget()
        self.clients.setMaximumWidth(220)
        for spec in self._table.values():
            self.clients.addItem(spec.name)
        self.about = QLabel()
        self.about.setWordWrap(True)
        self.about.setTextFormat(Qt.TextFormat.PlainText)
        self.about.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.show_key = QCheckBox("Show the key")
        self.copy_button = QPushButton("Copy settings")
        self.copy_button.setToolTip("Copy these settings, with the real key")
        self.base_url = QLabel()
        self.base_url.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.copy_url_button = QPushButton("Copy")
        self.copy_url_button.setToolTip("Copy the OpenAI base URL")
        self.key_label = QLabel()
        self.copy_key_button = QPushButton("Copy")
        self.copy_key_button.setToolTip("Copy the gateway key")
        self.status = QLabel("Reading the gateway's models and key…")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self._lay_out()
        self.model_combo.currentIndexChanged.connect(self._on_model_combo_changed)
        self.clients.currentRowChanged.connect(self._on_clients_row_changed)
        self.show_key.toggled.connect(self._on_show_key_toggled)
        self.copy_button.clicked.connect(self.copy_settings)
        self.copy_url_button.clicked.connect(self.copy_base_url)
        self.copy_key_button.clicked.connect(self.copy_key)
        if self._table:
            self.clients.setCurrentRow(0)
        self._set_enabled(False)
        self.reload()

    def _lay_out(self) -> None:
        top = QFormLayout()
        top.addRow("Model:", self.model_combo)
        url_row = QHBoxLayout()
        url_row.addWidget(self.base_url, 1)
        url_row.addWidget(self.copy_url_button)
        top.addRow("Base URL:", url_row)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key_label, 1)
        key_row.addWidget(self.show_key)
        key_row.addWidget(self.copy_key_button)
        top.addRow("Key:", key_row)
        right = QVBoxLayout()
        right.addWidget(self.about)
        right.addWidget(self.text, 1)
        copy_row = QHBoxLayout()
        copy_row.addStretch(1)
        copy_row.addWidget(self.copy_button)
        right.addLayout(copy_row)
        middle = QHBoxLayout()
        middle.addWidget(self.clients)
        middle.addLayout(right, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(middle, 1)
        layout.addWidget(self.status)
        layout.addWidget(buttons)

    # -- what the daemon says ------------------------------------------------------------

    def reload(self) -> None:
        if self._table_error is not None:
            self.status.setText(self._table_error)
            return
        self._call = call = self._calls.facts()
        self._ops.run(call, self._on_call_succeeded, on_failure=self._on_call_failed)

    def _on_call_succeeded(self, facts: GatewayFacts) -> None:
        self._facts = facts
        ids = [m.id for m in facts.models.models]
        chosen = self._chosen_model(facts, ids)
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        self.model_combo.addItems(ids)
        if chosen is not None:
            self.model_combo.setCurrentIndex(ids.index(chosen))
        self.model_combo.blockSignals(False)
        if not ids:
            self.status.setText(
                "The gateway has no model yet: start one on the Engines page, or save a "
                "preset, and open this again."
            )
        else:
            self.status.setText("" if facts.key else NO_KEY_NOTE)
        self._set_enabled(bool(ids))
        self._refresh()

    def _chosen_model(self, facts: GatewayFacts, ids: list[str]) -> str | None:
        """The model asked for (by id, path or instance), else the active one, else the first."""
        wanted = self._wanted
        for entry in facts.models.models:
            if wanted is not None and wanted in (entry.id, entry.model, entry.instance):
                return entry.id
        active = facts.models.active_model
        if active in ids:
            return active
        return ids[0] if ids else None

    def _on_call_failed(self, failure: Failure) -> None:
        self.status.setText(f"Could not read the gateway's settings. {failure}")

    # -- the settings shown ---------------------------------------------------------------

    def target(self, *, revealed: bool) -> GatewayTarget | None:
        """The gateway, key and model the settings name; the key masked unless `revealed`."""
        facts = self._facts
        model = self.model_combo.currentText()
        if facts is None or not model:
            return None
        key = facts.key or PLACEHOLDER_KEY
        shown = key if revealed or facts.key is None else mask_key(key)
        return GatewayTarget(root=facts.root, key=shown, model=model)

    def current_client(self) -> ClientSpec | None:
        row = self.clients.currentRow()
        specs = list(self._table.values())
        return specs[row] if 0 <= row < len(specs) else None

    def settings_text(self, *, revealed: bool) -> str:
        spec, target = self.current_client(), self.target(revealed=revealed)
        if spec is None or target is None:
            return ""
        return client_text(spec, target)

    def _refresh(self) -> None:
        spec = self.current_client()
        if spec is not None:
            launch = f" · or run `roundhouse launch {self._id_of(spec)}`" if spec.command else ""
            words = f"{KIND_WORDS[spec.kind]} · speaks {spec.api}{launch}"
            self.about.setText(f"{words}\nDocs: {spec.docs}")
        revealed = self.show_key.isChecked()
        self.text.setPlainText(self.settings_text(revealed=revealed))
        target = self.target(revealed=revealed)
        self.base_url.setText(target.v1 if target is not None else "")
        self.key_label.setText(target.key if target is not None else "")

    def _id_of(self, spec: ClientSpec) -> str:
        return next(cid for cid, s in self._table.items() if s is spec)

    def _set_enabled(self, enabled: bool) -> None:
        for widget in (
            self.copy_button,
            self.copy_url_button,
            self.copy_key_button,
            self.show_key,
            self.model_combo,
        ):
            widget.setEnabled(enabled)

    def _on_model_combo_changed(self, _index: int) -> None:
        self._refresh()

    def _on_clients_row_changed(self, _row: int) -> None:
        self._refresh()

    def _on_show_key_toggled(self, _shown: bool) -> None:
        self._refresh()

    # -- copying ----------------------------------------------------------------------------

    def copy_settings(self) -> None:
        spec = self.current_client()
        text = self.settings_text(revealed=True)
        if spec is None or not text:
            return
        QGuiApplication.clipboard().setText(text)
        self.status.setText(f"Copied the settings for {spec.name}, with the key.")

    def copy_base_url(self) -> None:
        target = self.target(revealed=True)
        if target is not None:
            QGuiApplication.clipboard().setText(target.v1)
            self.status.setText(f"Copied {target.v1}")

    def copy_key(self) -> None:
        target = self.target(revealed=True)
        if target is not None:
            QGuiApplication.clipboard().setText(target.key)
            self.status.setText("Copied the gateway key.")
