"""The Paired machines section of the Settings page: the peer listener (address, port), this
machine's name for its peers, mDNS discovery, and Pair a machine… (docs/machines.md). Where
the listener listens, or why not, the Machines page shows."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from roundhouse.api.settings import PeersSettings, Settings
from roundhouse.gui.calls.peers import PeersCalls
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.dialogs.pair_dialog import PairDialog
from roundhouse.gui.widgets.settings_path_list import hint, schema_bounds

LISTEN_HINT = (
    "Where paired machines reach this one (TLS, their keys only): 0.0.0.0 for every address, "
    "or one LAN address. Empty: off; this machine can still pair with others."
)
DISCOVERY_HINT = (
    "Say on the LAN (mDNS) where the listener is, so `roundhouse peers discover` finds it. "
    "Pairing still needs the code."
)


class PeersSettingsSection(QGroupBox):
    """`apply()` puts the form into settings; `changed` says the form moved."""

    changed = Signal()

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__("Paired machines", parent)
        self._calls = PeersCalls(bridge)
        self.dialog: PairDialog | None = None
        self.listen_host = QLineEdit()
        self.listen_host.setPlaceholderText("off (e.g. 0.0.0.0)")
        self.port = QSpinBox()
        self.port.setRange(*schema_bounds(PeersSettings, "port"))
        self.name = QLineEdit()
        self.name.setPlaceholderText("this machine's host name")
        self.discovery = QCheckBox("Advertise on the LAN (mDNS)")
        for edit in (self.listen_host, self.name):
            edit.textChanged.connect(self._on_changed)
        self.port.valueChanged.connect(self._on_changed)
        self.discovery.toggled.connect(self._on_changed)
        self.pair_button = QPushButton("Pair a machine…")
        self.pair_button.clicked.connect(self.open_pairing)
        form = QFormLayout(self)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        form.addRow("Listen on:", self.listen_host)
        form.addRow("", hint(LISTEN_HINT))
        form.addRow("Port:", self.port)
        form.addRow("Name:", self.name)
        form.addRow("", self.discovery)
        form.addRow("", hint(DISCOVERY_HINT))
        form.addRow("", self.pair_button)

    def show_settings(self, settings: Settings) -> None:
        peers = settings.peers
        for widget in (self.listen_host, self.port, self.name, self.discovery):
            widget.blockSignals(True)
        self.listen_host.setText(peers.listen_host)
        self.port.setValue(peers.port)
        self.name.setText(peers.name)
        self.discovery.setChecked(peers.discovery)
        for widget in (self.listen_host, self.port, self.name, self.discovery):
            widget.blockSignals(False)

    def apply(self, settings: Settings) -> Settings:
        peers = settings.peers.model_copy(
            update={
                "listen_host": self.listen_host.text().strip(),
                "port": self.port.value(),
                "name": self.name.text().strip(),
                "discovery": self.discovery.isChecked(),
            }
        )
        return settings.model_copy(update={"peers": peers})

    def open_pairing(self) -> None:
        if self.dialog is None:
            self.dialog = PairDialog(self._calls, self.window())
        self.dialog.show()
        self.dialog.raise_()

    def _on_changed(self, *_: Any) -> None:
        self.changed.emit()
