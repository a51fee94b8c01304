"""The active model: what the gateway can serve, and the one the quick chat and tray use.

One object shared by the tray's "Active model" menu and the quick chat window, so a choice
made in one shows in the other without asking the daemon twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from roundhouse.api.gateway import GatewayModel, GatewayModelList, ModelState
from roundhouse.api.settings import Settings
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.settings_patch import patch_settings, with_active_model

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge

STATE_WORDS = {
    ModelState.SERVING: "serving",
    ModelState.LOADING: "loading",
    ModelState.STARTABLE: "starts on the first message",
}


class ActiveModel(QObject):
    """`changed()` after each listing or choice; `failed(str)` says why one did not happen."""

    changed = Signal()
    failed = Signal(str)

    def __init__(self, bridge: DaemonBridge) -> None:
        super().__init__()
        self._bridge = bridge
        self.models: list[GatewayModel] = []
        self.active: str | None = None
        self.loaded = False
        # Listed when someone looks (the tray's menu opens, quick chat shows), not at connect.
        self._listing: Call | None = None

    def refresh(self) -> None:
        """Ask the daemon for the models and the active one; a listing on its way is enough."""
        if self._listing is not None:
            return
        self._listing = call = self._bridge.call(
            "list the models the gateway serves", lambda c: c.gateway_models()
        )
        call.succeeded.connect(self._on_listing_succeeded)
        call.failed.connect(self._on_call_failed)
        call.finished.connect(self._on_listing_finished)

    def choose(self, model: str | None) -> Call:
        """Save `model` as settings.chat.active_model; answers with the Settings saved."""
        call = patch_settings(self._bridge, "choose the active model", with_active_model(model))
        call.succeeded.connect(self._on_choice_saved)
        call.failed.connect(self._on_call_failed)
        return call

    def find(self, model_id: str | None) -> GatewayModel | None:
        return next((m for m in self.models if m.id == model_id), None)

    def describe(self) -> str:
        """'tiny — llama.cpp, serving'; '' when no model is active."""
        if not self.active:
            return ""
        found = self.find(self.active)
        if found is None:
            return f"{self.active} (nothing serves it now)" if self.loaded else self.active
        return f"{found.id} — {found.engine.value}, {STATE_WORDS[found.state]}"

    def _on_listing_succeeded(self, listed: GatewayModelList) -> None:
        self.models = list(listed.models)
        self.active = listed.active_model
        self.loaded = True
        self.changed.emit()

    def _on_listing_finished(self) -> None:
        self._listing = None

    def _on_choice_saved(self, settings: Settings) -> None:
        self.active = settings.chat.active_model
        self.changed.emit()

    def _on_call_failed(self, failure: Failure) -> None:
        self.failed.emit(str(failure))
