"""The Running instances section's buttons and its row menu, enabled for the chosen row."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QHBoxLayout, QMenu, QPushButton, QWidget

from roundhouse.api.instances import InstanceInfo, InstanceOrigin, InstanceStatus
from roundhouse.gui.icons import set_icon
from roundhouse.gui.widgets.instances_words import is_endpoint

# The actions on the chosen row, as buttons and in the row's context menu, in this order.
ROW_ACTIONS = ("stop", "restart", "logs", "metrics", "copy", "use")
RESTART_TIP = "Stop it and start it again with the same options"
PRESETS_TIP = (
    "Let the gateway send this engine, which Roundhouse did not start, the requests for "
    "models your presets start. Off: the gateway starts those models itself."
)


class InstanceActions:
    """Start…, the row's actions, Scan and Attach…: which are enabled follows the chosen row,
    the connection and what is on its way."""

    def __init__(self, parent: QWidget) -> None:
        self._parent = parent
        self.start_button = QPushButton("Start…")
        set_icon(self.start_button, "play")
        self.start_button.setToolTip("Start an engine with a model")
        self.stop_button = QPushButton("Stop")
        set_icon(self.stop_button, "square")
        self.restart_button = QPushButton("Restart")
        set_icon(self.restart_button, "refresh-cw")
        self.restart_button.setToolTip(RESTART_TIP)
        self.logs_button = QPushButton("Logs")
        self.logs_button.setToolTip("Follow the engine's output")
        self.metrics_button = QPushButton("Metrics")
        self.metrics_button.setToolTip("The engine's own counters: tokens, requests, cache")
        self.copy_button = QPushButton("Copy base URL")
        self.copy_button.setToolTip("Copy the engine's OpenAI-compatible base URL")
        self.use_button = QPushButton("Use with…")
        self.use_button.setToolTip(
            "Settings for Claude Code, Codex, OpenCode, the OpenAI and Anthropic SDKs, Open "
            "WebUI and Continue, pointed at the gateway and this model"
        )
        self.scan_button = QPushButton("Scan")
        self.scan_button.setToolTip(
            "Look for engines running on this machine without Roundhouse (and Ollama)"
        )
        self.attach_button = QPushButton("Attach…")
        self.attach_button.setToolTip("Add an OpenAI-compatible server or exo by its URL")
        self._buttons = {
            "stop": self.stop_button,
            "restart": self.restart_button,
            "logs": self.logs_button,
            "metrics": self.metrics_button,
            "copy": self.copy_button,
            "use": self.use_button,
        }
        self._menu_actions = {
            "stop": QAction("Stop", parent),
            "restart": QAction("Restart", parent),
            "logs": QAction("Logs", parent),
            "metrics": QAction("Metrics", parent),
            "copy": QAction("Copy base URL", parent),
            "use": QAction("Use with…", parent),
        }
        # Only for an engine Roundhouse did not start, in the row's menu.
        self.presets_action = QAction("May serve preset models", parent)
        self.presets_action.setCheckable(True)
        self.presets_action.setToolTip(PRESETS_TIP)
        self.presets_action.setVisible(False)

    def connect(self, key: str, slot: Callable[[], object]) -> None:
        """Run `slot` from the row action's button and from its menu entry."""
        self._buttons[key].clicked.connect(slot)
        self._menu_actions[key].triggered.connect(slot)

    def row(self) -> QHBoxLayout:
        """Start… apart, the row's actions, then Scan and Attach… at the far end."""
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addSpacing(12)
        for key in ROW_ACTIONS:
            buttons.addWidget(self._buttons[key])
        buttons.addStretch(1)
        buttons.addWidget(self.scan_button)
        buttons.addWidget(self.attach_button)
        return buttons

    def popup_menu(self, at: QPoint) -> None:
        """The row's actions as a context menu at `at` (global coordinates)."""
        menu = QMenu(self._parent)
        for key in ROW_ACTIONS:
            menu.addAction(self._menu_actions[key])
        if self.presets_action.isVisible():
            menu.addSeparator()
            menu.addAction(self.presets_action)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.popup(at)

    def update(
        self, info: InstanceInfo | None, *, connected: bool, busy: bool, scanning: bool
    ) -> None:
        """Enable and name the actions for `info` (the chosen row, or None); `busy`: an
        action on it is on its way, `scanning`: a scan is."""
        usable = connected and info is not None and not busy
        failed = info is not None and info.status == InstanceStatus.FAILED
        endpoint = info is not None and is_endpoint(info)
        stop_text = "Dismiss" if failed else "Detach" if endpoint else "Stop"
        self.stop_button.setText(stop_text)
        self._menu_actions["stop"].setText(stop_text)
        if failed:
            self.stop_button.setToolTip("Forget this failed instance")
        elif endpoint:
            self.stop_button.setToolTip("Forget this server; it keeps running")
        else:
            self.stop_button.setToolTip("Stop the engine and its processes")
        can_restart = usable and info is not None and info.options is not None
        enabled = {
            "stop": usable and (info is None or info.status != InstanceStatus.STOPPING),
            "restart": can_restart,
            "logs": info is not None and connected and not endpoint,
            "metrics": info is not None and connected and not failed,
            "copy": info is not None and not failed,
            "use": info is not None and connected and not failed,
        }
        for key in ROW_ACTIONS:
            self._buttons[key].setEnabled(enabled[key])
            self._menu_actions[key].setEnabled(enabled[key])
        external = info is not None and info.origin == InstanceOrigin.EXTERNAL and not failed
        self.presets_action.setVisible(external)
        self.presets_action.setEnabled(external and usable)
        self.presets_action.setChecked(info is not None and external and info.may_serve_presets)
        self.start_button.setEnabled(connected)
        self.scan_button.setEnabled(connected and not scanning)
        self.attach_button.setEnabled(connected)
        if info is not None and info.options is None:
            self.restart_button.setToolTip(
                "Roundhouse does not know the options this engine was started with: "
                "stop it and start it again instead."
            )
        else:
            self.restart_button.setToolTip(RESTART_TIP)
