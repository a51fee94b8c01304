"""The windows the Running instances section opens: logs and metrics per instance, Attach…."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from PySide6.QtWidgets import QDialog, QWidget

from roundhouse.api.instances import InstanceInfo
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.dialogs.attach_dialog import AttachDialog
from roundhouse.gui.dialogs.log_dialog import LogDialog
from roundhouse.gui.dialogs.metrics_dialog import MetricsDialog
from roundhouse.gui.dialogs.use_with_dialog import UseWithDialog

DialogT = TypeVar("DialogT", bound=QDialog)


class InstanceWindows:
    """One log window and one metrics window per instance, one attach dialog at a time; each
    is forgotten (and deleted) when it closes."""

    def __init__(self, bridge: DaemonBridge, owner: QWidget) -> None:
        self._bridge = bridge
        # The windows belong to the owner's window, whichever that is when one opens.
        self._owner = owner
        self.log_dialogs: dict[str, LogDialog] = {}
        self.metrics_dialogs: dict[str, MetricsDialog] = {}
        self.attach_dialog: AttachDialog | None = None
        self.use_with_dialog: UseWithDialog | None = None

    def open_logs(self, info: InstanceInfo) -> LogDialog:
        """One log window per instance: opening it again brings it to the front."""
        return _bring_up(
            self.log_dialogs,
            info.id,
            lambda: LogDialog(self._bridge, info, self._owner.window()),
        )

    def open_metrics(self, info: InstanceInfo) -> MetricsDialog:
        """One metrics window per instance: opening it again brings it to the front."""
        return _bring_up(
            self.metrics_dialogs,
            info.id,
            lambda: MetricsDialog(self._bridge, info, self._owner.window()),
        )

    def open_attach(self, on_attached: Callable[[InstanceInfo], None]) -> AttachDialog:
        """One attach dialog at a time; `on_attached` runs with the server it attached."""
        if self.attach_dialog is not None:
            self.attach_dialog.raise_()
            return self.attach_dialog
        dialog = AttachDialog(self._bridge, self._owner.window())
        dialog.attached.connect(on_attached)
        dialog.finished.connect(self._on_attach_dialog_finished)
        self.attach_dialog = dialog
        # open(), not exec(): a nested event loop would stall qasync's tasks.
        dialog.open()
        return dialog

    def open_use_with(self, model: str | None) -> UseWithDialog:
        """One Use with… window, showing `model` (an id, a path or an instance id)."""
        if self.use_with_dialog is not None:
            self.use_with_dialog.close()
        dialog = UseWithDialog(self._bridge, model, self._owner.window())
        dialog.finished.connect(self._on_use_with_dialog_finished)
        self.use_with_dialog = dialog
        dialog.open()
        return dialog

    def _on_use_with_dialog_finished(self) -> None:
        dialog, self.use_with_dialog = self.use_with_dialog, None
        if dialog is not None:
            dialog.deleteLater()

    def _on_attach_dialog_finished(self) -> None:
        dialog, self.attach_dialog = self.attach_dialog, None
        if dialog is not None:
            dialog.deleteLater()


def _bring_up(
    dialogs: dict[str, DialogT], instance_id: str, make: Callable[[], DialogT]
) -> DialogT:
    """Show the instance's window, made and remembered the first time, at the front."""
    dialog = dialogs.get(instance_id)
    if dialog is None:
        dialog = make()
        dialog.finished.connect(lambda _: _forget(dialogs, instance_id))
        dialogs[instance_id] = dialog
    dialog.show()
    dialog.raise_()
    dialog.activateWindow()
    return dialog


def _forget(dialogs: dict[str, DialogT], instance_id: str) -> None:
    dialog = dialogs.pop(instance_id, None)
    if dialog is not None:
        dialog.deleteLater()
