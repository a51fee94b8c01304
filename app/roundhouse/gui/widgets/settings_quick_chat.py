"""The Quick chat key section of the Settings page: the key (a key-sequence editor) and whether
it works while other apps have focus, saved and applied at once, with the key's state in
words (held, off, or taken and what to do)."""

from __future__ import annotations

from PySide6.QtGui import QKeySequence, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QKeySequenceEdit,
    QLabel,
    QPushButton,
    QWidget,
)

from roundhouse.api.settings import UiSettings
from roundhouse.api.shortcut import DEFAULT_QUICK_CHAT_KEY, parse_shortcut
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.settings import patch_settings, with_ui
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.quick_chat_key import QuickChatKey

PORTABLE = QKeySequence.SequenceFormat.PortableText
KEY_HINT = (
    "Press the keys in the box to change it; it is used at once. On Wayland, bind this key "
    "to the command `roundhouse quick-chat` in your desktop's keyboard settings."
)


class QuickChatKeySection(QGroupBox):
    """Not part of the page's Save: each change is saved and applied as it is made."""

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__("Quick chat key", parent)
        self._bridge = bridge
        self._followed: QuickChatKey | None = None
        self.editor = QKeySequenceEdit()
        self.editor.setAccessibleName("Quick chat key")
        self.editor.setMaximumSequenceLength(1)
        self.editor.setClearButtonEnabled(False)
        self.default_button = QPushButton("Default")
        self.default_button.setToolTip(f"Use {DEFAULT_QUICK_CHAT_KEY} again")
        self.global_box = QCheckBox("Works while other apps have focus")
        self.state = QLabel()
        self.state.setObjectName("hint")
        self.state.setWordWrap(True)
        self.error = QLabel()
        self.error.setObjectName("formProblem")
        self.error.setWordWrap(True)
        self.error.hide()
        hint = QLabel(KEY_HINT)
        hint.setObjectName("hint")
        hint.setWordWrap(True)
        key_row = QHBoxLayout()
        key_row.addWidget(self.editor, 1)
        key_row.addWidget(self.default_button)
        layout = QFormLayout(self)
        layout.addRow("Key", key_row)
        layout.addRow(self.global_box)
        layout.addRow(self.state)
        layout.addRow(self.error)
        layout.addRow(hint)
        self._show(bridge.ui_settings)
        self.editor.editingFinished.connect(self._on_key_edited)
        self.default_button.clicked.connect(lambda: self.choose_key(DEFAULT_QUICK_CHAT_KEY))
        self.global_box.toggled.connect(self._on_global_toggled)
        bridge.ui_settings_changed.connect(self._show)

    def choose_key(self, text: str) -> None:
        """What the editor does when a key is pressed in it: checked, then saved."""
        self.error.hide()
        try:
            key = str(parse_shortcut(text))
        except ValueError as exc:
            self._fail(f"That key was not used: {exc}.")
            self._show(self._bridge.ui_settings)
            return
        self._save("change the quick chat key", quick_chat_key=key)

    def key_text(self) -> str:
        return self.editor.keySequence().toString(PORTABLE)

    def _on_key_edited(self) -> None:
        text = self.key_text()
        if text and text != self._bridge.ui_settings.quick_chat_key:
            self.choose_key(text)

    def _on_global_toggled(self, on: bool) -> None:
        self.error.hide()
        self._save("turn the global quick chat key on or off", quick_chat_global=on)

    def _save(self, what: str, **changes: object) -> None:
        call = patch_settings(self._bridge, what, with_ui(**changes))
        call.failed.connect(lambda failure: self._on_failed(failure))

    def _on_failed(self, failure: Failure) -> None:
        self._fail(f"The quick chat key was not changed: {failure}")
        self._show(self._bridge.ui_settings)

    def _fail(self, text: str) -> None:
        self.error.setText(text)
        self.error.show()

    def _show(self, ui: UiSettings) -> None:
        for widget in (self.editor, self.global_box):
            widget.blockSignals(True)
        self.editor.setKeySequence(QKeySequence.fromString(ui.quick_chat_key, PORTABLE))
        self.global_box.setChecked(ui.quick_chat_global)
        for widget in (self.editor, self.global_box):
            widget.blockSignals(False)
        self._show_state()

    def _show_state(self) -> None:
        # The app's key is built once the app runs, after this page: found when shown.
        key = QuickChatKey.of(self._bridge)
        if key is not None and key is not self._followed:
            self._followed = key
            key.hotkey.changed.connect(self._show_state)
        if key is None:
            self.state.setText("")
            self.state.hide()
            return
        self.state.setText(key.hotkey.words)
        self.state.setObjectName("formProblem" if key.hotkey.problem else "hint")
        self.state.style().unpolish(self.state)
        self.state.style().polish(self.state)
        self.state.show()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._show_state()
