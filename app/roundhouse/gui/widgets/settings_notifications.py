"""The Notifications section of the Settings page: when to tell, and each kind on or off.

Each switch is saved as it is flipped (like the tray's switches and the theme), not with the
page's Save: the notifier reads the saved settings at each event, so the change applies to
the next one. The section shows the settings as the change feed last told them.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QCheckBox, QGroupBox, QLabel, QVBoxLayout, QWidget

from roundhouse.api.settings import NotificationSettings, NotificationWhen, Settings
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.settings import patch_settings
from roundhouse.gui.connection_state import ConnectionState
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.notify_words import NoticeKind
from roundhouse.gui.widgets.settings_path_list import hint

# Each kind's switch, in the order shown.
KIND_WORDS = {
    NoticeKind.DOWNLOAD_FINISHED: "A download finished",
    NoticeKind.DOWNLOAD_FAILED: "A download failed",
    NoticeKind.ENGINE_CRASHED: "An engine stopped unexpectedly (and whether it was restarted)",
    NoticeKind.MODEL_LOADED: "The gateway loaded a model a request asked for",
    NoticeKind.UPDATE_AVAILABLE: "A newer Roundhouse is out",
}
NOTIFICATIONS_HINT = (
    "Shown by the tray where there is one, else by the desktop's notifications. Several at "
    "once are told together, and the same news is not repeated within a minute."
)


def with_notifications(**changes: object) -> Callable[[Settings], Settings]:
    """A change of the `notifications` part, for patch_settings."""

    def change(settings: Settings) -> Settings:
        section = settings.notifications.model_copy(update=changes)
        return settings.model_copy(update={"notifications": section})

    return change


class NotificationsSection(QGroupBox):
    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__("Notifications", parent)
        self._bridge = bridge
        self.always = QCheckBox("Also while the Roundhouse window is on screen")
        self.always.setToolTip("Off: only while the window is hidden to the tray or minimised")
        self.always.toggled.connect(self._on_always_toggled)
        self.kinds: dict[NoticeKind, QCheckBox] = {}
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Tell me when:"))
        for kind, words in KIND_WORDS.items():
            box = QCheckBox(words)
            box.setObjectName(f"notify_{kind.value}")
            box.toggled.connect(lambda on, kind=kind: self._on_kind_toggled(kind, on))
            self.kinds[kind] = box
            layout.addWidget(box)
        layout.addWidget(self.always)
        layout.addWidget(hint(NOTIFICATIONS_HINT))
        self.problem = QLabel()
        self.problem.setObjectName("dialogError")
        self.problem.setWordWrap(True)
        self.problem.hide()
        layout.addWidget(self.problem)
        bridge.settings_changed.connect(self._on_settings_changed)
        bridge.state_changed.connect(self._on_state_changed)
        self.show_settings(
            bridge.settings_full.notifications
            if bridge.settings_full is not None
            else NotificationSettings()
        )
        self._on_state_changed()

    def show_settings(self, section: NotificationSettings) -> None:
        for kind, box in self.kinds.items():
            box.blockSignals(True)
            box.setChecked(bool(getattr(section, kind.value)))
            box.blockSignals(False)
        self.always.blockSignals(True)
        self.always.setChecked(section.when == NotificationWhen.ALWAYS)
        self.always.blockSignals(False)

    def _on_settings_changed(self, settings: Settings) -> None:
        self.show_settings(settings.notifications)

    def _on_state_changed(self, *_: object) -> None:
        self.setEnabled(self._bridge.state == ConnectionState.CONNECTED)

    def _on_kind_toggled(self, kind: NoticeKind, on: bool) -> None:
        self._save(KIND_WORDS[kind], **{kind.value: on})

    def _on_always_toggled(self, on: bool) -> None:
        when = NotificationWhen.ALWAYS if on else NotificationWhen.HIDDEN
        self._save(self.always.text(), when=when)

    def _save(self, what: str, **changes: object) -> None:
        self.problem.hide()
        call = patch_settings(self._bridge, f"change “{what}”", with_notifications(**changes))
        call.failed.connect(self._on_failed)

    def _on_failed(self, failure: Failure) -> None:
        self.problem.setText(f"Not saved: {failure}")
        self.problem.show()
        # Show what the daemon has again.
        if self._bridge.settings_full is not None:
            self.show_settings(self._bridge.settings_full.notifications)
