"""The Gateway section of the Settings page: scheduling, the second address, hosts, CORS,
the hosts engines may fetch media from, the API key (shown once when generated) and where
the gateway listens now.

The settings fields are saved with the page (its Save button); the key and the listeners'
state are the daemon's own calls, made at once.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.gateway import GatewayKey, GatewayStatus
from roundhouse.api.settings import GatewaySettings
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.gateway import GatewayCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.theme.roles import role_hex
from roundhouse.gui.widgets.confirm import ask_to_confirm
from roundhouse.gui.widgets.gateway_names import ModelNamesEditor


def _bounds(name: str) -> tuple[int, int]:
    field = GatewaySettings.model_json_schema()["properties"][name]
    return int(field.get("minimum", 0)), int(field.get("maximum", 1_000_000))


def _spin(name: str, suffix: str = "", step: int = 1) -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(*_bounds(name))
    spin.setSuffix(suffix)
    spin.setSingleStep(step)
    spin.setToolTip(GatewaySettings.model_fields[name].description or "")
    return spin


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _hint(text: str) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setObjectName("hint")
    return label


class GatewaySettingsSection(QGroupBox):
    """`form()` is what the page saves; `changed` says the form moved."""

    changed = Signal()

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__("Gateway", parent)
        self._calls = GatewayCalls(bridge)
        self._ops = Ops(self, on_busy=self._update_buttons)
        self.status: GatewayStatus | None = None
        self.confirm_box: QMessageBox | None = None
        self._connected = False

        self.just_in_time = QCheckBox(
            "Start a model when a request names it (its preset, else settings that fit)"
        )
        self.idle_ttl = _spin("idle_ttl_s", " s", 60)
        self.idle_ttl.setSpecialValueText("Never")
        self.max_resident = _spin("max_resident")
        self.max_concurrent = _spin("max_concurrent")
        self.queue_size = _spin("queue_size")
        self.queue_timeout = _spin("queue_timeout_s", " s", 30)
        self.listen_host = QLineEdit()
        self.listen_host.setPlaceholderText("Off; e.g. 0.0.0.0 to serve the local network")
        self.listen_port = _spin("listen_port")
        self.ollama_port = QCheckBox("Also answer on Ollama's address, 127.0.0.1:11434")
        self.ollama_port.setToolTip(
            GatewaySettings.model_fields["ollama_port_enabled"].description or ""
        )
        # Not on the form (the CLI and the API set it): kept as shown, saved unchanged.
        self._ollama_port_number = GatewaySettings.model_fields["ollama_port"].default
        self.allowed_hosts = QLineEdit()
        self.allowed_hosts.setPlaceholderText("e.g. gpu-box.lan, llm.example.com")
        self.cors_origins = QLineEdit()
        self.cors_origins.setPlaceholderText("None; e.g. http://localhost:3000")
        self.media_domains = QLineEdit()
        self.media_domains.setPlaceholderText("None: images only inline; e.g. upload.wikimedia.org")
        self.media_domains.setToolTip(
            GatewaySettings.model_fields["media_domains"].description or ""
        )
        self.pass_through = QCheckBox(
            "Send Anthropic and Responses requests to engines that speak them themselves"
        )
        self.pass_through.setToolTip(GatewaySettings.model_fields["pass_through"].description or "")
        self.names = ModelNamesEditor()
        self.names.changed.connect(self._on_changed)
        for check in (self.just_in_time, self.ollama_port, self.pass_through):
            check.toggled.connect(self._on_changed)
        for spin in (self.idle_ttl, self.max_resident, self.max_concurrent, self.queue_size):
            spin.valueChanged.connect(self._on_changed)
        for spin in (self.queue_timeout, self.listen_port):
            spin.valueChanged.connect(self._on_changed)
        for edit in (self.listen_host, self.allowed_hosts, self.cors_origins, self.media_domains):
            edit.textChanged.connect(self._on_changed)

        self.key_state = QLabel("Not known yet")
        self.key_state.setTextFormat(Qt.TextFormat.PlainText)  # may name a file path
        self.generate_button = QPushButton("Generate")
        self.generate_button.setToolTip("Make a new random key; the old one stops working")
        self.generate_button.clicked.connect(self.generate_key)
        self.clear_button = QPushButton("Clear…")
        self.clear_button.clicked.connect(self.clear_key)
        self.new_key = QLineEdit()
        self.new_key.setReadOnly(True)
        self.copy_button = QPushButton("Copy")
        self.copy_button.clicked.connect(self.copy_key)
        self.new_key_hint = _hint(_new_key_hint("the system keyring"))
        # It names a file path: plain text, never markup.
        self.new_key_hint.setTextFormat(Qt.TextFormat.PlainText)
        self.listeners = QLabel()
        self.listeners.setWordWrap(True)
        self.listeners.setTextFormat(Qt.TextFormat.RichText)
        self.listeners.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error = QLabel()
        self.error.setObjectName("dialogError")
        self.error.setWordWrap(True)
        self.error.hide()
        self._layout()
        self._show_new_key(None)

    def _layout(self) -> None:
        form = QFormLayout(self)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        form.addRow("Just in time:", self.just_in_time)
        left = Qt.AlignmentFlag.AlignLeft
        form.addRow("Stop idle models after:", self.idle_ttl)
        form.addRow("Models loaded at most:", self.max_resident)
        form.addRow("Requests at once per model:", self.max_concurrent)
        for spin in (self.idle_ttl, self.max_resident, self.max_concurrent):
            form.setAlignment(spin, left)
        queue = QHBoxLayout()
        queue.addWidget(self.queue_size)
        queue.addWidget(QLabel("requests wait, each at most"))
        queue.addWidget(self.queue_timeout)
        queue.addStretch(1)
        form.addRow("Queue:", queue)
        second = QHBoxLayout()
        second.addWidget(self.listen_host, 1)
        second.addWidget(QLabel("port"))
        second.addWidget(self.listen_port)
        second_box = QVBoxLayout()
        second_box.addLayout(second)
        second_box.addWidget(
            _hint(
                "A second address serving only the gateway (/v1 and Ollama's API), for other "
                "apps. Beyond this machine it needs the API key, and every request to it must "
                "carry the key once one is set."
            )
        )
        form.addRow("Second address:", second_box)
        ollama_box = QVBoxLayout()
        ollama_box.addWidget(self.ollama_port)
        ollama_box.addWidget(
            _hint(
                "For apps that can only reach Ollama at its usual address: they get every "
                "model here through Ollama's API. Not while Ollama itself runs there (the "
                "reason shows under Listening)."
            )
        )
        form.addRow("Ollama's address:", ollama_box)
        pass_box = QVBoxLayout()
        pass_box.addWidget(self.pass_through)
        pass_box.addWidget(
            _hint(
                "Off: every request is translated to chat completions, for an engine whose own "
                "Anthropic or Responses endpoint misbehaves. Replies say which way each went "
                "(x-roundhouse-path)."
            )
        )
        form.addRow("Pass through:", pass_box)
        names_box = QVBoxLayout()
        names_box.addWidget(self.names)
        names_box.addWidget(
            _hint(
                "Other names for models: a request for an alias (e.g. claude-sonnet-4-5) is "
                "served by its model (e.g. qwen3-coder-30b)."
            )
        )
        form.addRow("Aliases:", names_box)
        form.addRow("Default model:", self.names.default_model)
        form.addRow("Allowed host names:", self.allowed_hosts)
        form.addRow("Browser origins (CORS):", self.cors_origins)
        media_box = QVBoxLayout()
        media_box.addWidget(self.media_domains)
        media_box.addWidget(
            _hint(
                "Requests may name images, audio and video by URL only on these hosts (exact "
                "names): the engine fetches them from this machine. Inline data: URLs always work."
            )
        )
        form.addRow("Media from these hosts:", media_box)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key_state, 1)
        key_row.addWidget(self.generate_button)
        key_row.addWidget(self.clear_button)
        new_row = QHBoxLayout()
        new_row.addWidget(self.new_key, 1)
        new_row.addWidget(self.copy_button)
        key_box = QVBoxLayout()
        key_box.addLayout(key_row)
        key_box.addLayout(new_row)
        key_box.addWidget(self.new_key_hint)
        form.addRow("API key:", key_box)
        form.addRow("Listening:", self.listeners)
        form.addRow(self.error)

    # -- the settings part --------------------------------------------------------------

    def show_settings(self, gateway: GatewaySettings) -> None:
        self.just_in_time.setChecked(gateway.just_in_time)
        self.idle_ttl.setValue(round(gateway.idle_ttl_s))
        self.max_resident.setValue(gateway.max_resident)
        self.max_concurrent.setValue(gateway.max_concurrent)
        self.queue_size.setValue(gateway.queue_size)
        self.queue_timeout.setValue(round(gateway.queue_timeout_s))
        self.listen_host.setText(gateway.listen_host or "")
        self.listen_port.setValue(gateway.listen_port)
        self._ollama_port_number = gateway.ollama_port
        self.ollama_port.setText(
            f"Also answer on Ollama's address, 127.0.0.1:{gateway.ollama_port}"
        )
        self.ollama_port.setChecked(gateway.ollama_port_enabled)
        self.pass_through.setChecked(gateway.pass_through)
        self.allowed_hosts.setText(", ".join(gateway.allowed_hosts))
        self.cors_origins.setText(", ".join(gateway.cors_origins))
        self.media_domains.setText(", ".join(gateway.media_domains))
        self.names.show_names(gateway.aliases, gateway.default_model)
        # What the daemon does with them shows in its listeners' state.
        self.refresh_status()

    def form(self) -> GatewaySettings:
        """The gateway settings as the form has them, unchecked: the daemon validates them."""
        return GatewaySettings.model_construct(
            just_in_time=self.just_in_time.isChecked(),
            idle_ttl_s=float(self.idle_ttl.value()),
            max_resident=self.max_resident.value(),
            max_concurrent=self.max_concurrent.value(),
            queue_size=self.queue_size.value(),
            queue_timeout_s=float(self.queue_timeout.value()),
            listen_host=self.listen_host.text().strip() or None,
            listen_port=self.listen_port.value(),
            ollama_port_enabled=self.ollama_port.isChecked(),
            ollama_port=self._ollama_port_number,
            pass_through=self.pass_through.isChecked(),
            allowed_hosts=_names(self.allowed_hosts.text()),
            cors_origins=_names(self.cors_origins.text()),
            media_domains=_names(self.media_domains.text()),
            aliases=self.names.aliases(),
            default_model=self.names.default(),
        )

    def _on_changed(self, *_: Any) -> None:
        self.changed.emit()

    # -- the key and the listeners ------------------------------------------------------

    def refresh_status(self) -> None:
        self._run(self._calls.status(), self.show_status, "The gateway's state was not read")

    def generate_key(self) -> None:
        def generated(answer: GatewayKey) -> None:
            self._show_new_key(answer.key, answer.kept_in)
            self.refresh_status()

        def generate() -> None:
            self._run(self._calls.generate(), generated, "No key was generated")

        if self.status is None or not self.status.key_set:
            generate()
            return
        self.confirm_box = ask_to_confirm(
            self,
            title="Replace the gateway key",
            text="Replace the gateway's API key with a new one?",
            detail="Apps that use the current key are refused until they are given the new one.",
            action="Replace key",
            on_confirm=generate,
            on_closed=self._on_confirm_closed,
        )

    def clear_key(self) -> None:
        self.confirm_box = ask_to_confirm(
            self,
            title="Clear the gateway key",
            text="Clear the gateway's API key?",
            detail="Apps that use it keep working on this machine without a key, but a second "
            "address beyond this machine stops listening until a new key is set.",
            action="Clear key",
            on_confirm=lambda: self._run(
                self._calls.clear(), self.show_status, "The key was not cleared"
            ),
            on_closed=self._on_confirm_closed,
        )

    def copy_key(self) -> None:
        QGuiApplication.clipboard().setText(self.new_key.text())
        self.copy_button.setText("Copied")

    def show_status(self, status: GatewayStatus) -> None:
        self.status = status
        # Where the daemon keeps it: the keyring, or without one a file only the user reads.
        kept = f"Set (kept in {status.key_kept_in})"
        self.key_state.setText(kept if status.key_set else "Not set")
        if not status.key_set:
            self._show_new_key(None)
        rows = []
        for listener in status.listeners:
            where = html.escape(listener.url)
            if listener.error:
                colour = role_hex("danger_text")
                rows.append(f"{where}: <span style='color:{colour}'>{html.escape(listener.error)}")
                rows[-1] += "</span>"
            else:
                rows.append(f"{where} ({'key required' if listener.needs_key else 'no key'})")
        self.listeners.setText("<br>".join(rows))
        self._update_buttons()

    def listeners_text(self) -> str:
        return self.listeners.text()

    def set_connected(self, connected: bool) -> None:
        self._connected = connected
        self._update_buttons()

    def _show_new_key(self, key: str | None, kept_in: str | None = None) -> None:
        self.new_key.setText(key or "")
        if kept_in is not None:
            self.new_key_hint.setText(_new_key_hint(kept_in))
        self.copy_button.setText("Copy")
        for widget in (self.new_key, self.copy_button, self.new_key_hint):
            widget.setVisible(key is not None)

    def _run(self, call: Call, on_success: Any, what: str) -> None:
        self.error.hide()
        self._ops.run(
            call, on_success, on_failure=lambda failure: self._fail(what, failure), busy=True
        )

    def _fail(self, what: str, failure: Failure) -> None:
        self.error.setText(f"{what}: {failure}")
        self.error.show()

    def _on_confirm_closed(self) -> None:
        self.confirm_box = None

    def _update_buttons(self) -> None:
        idle = self._connected and not self._ops.busy
        self.generate_button.setEnabled(idle)
        self.clear_button.setEnabled(idle and self.status is not None and self.status.key_set)


def _new_key_hint(kept_in: str) -> str:
    return (
        "Shown only now: copy it into the app that will use it (as its OpenAI API key). "
        f"Roundhouse keeps it in {kept_in}."
    )
