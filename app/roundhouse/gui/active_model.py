"""The active model: what the gateway can serve, and the one chat, quick chat and tray use.

One object shared by the chat page, the tray's "Active model" menu and the quick chat
window, so a choice made in one shows in the others at once. Which model is active is the
daemon's answer (`GatewayModelList.active_model`: the one last picked, started or chatted
with, else the only one running), so the app and `roundhouse chat` agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from roundhouse.api.gateway import GatewayModel, GatewayModelList, ModelState
from roundhouse.api.settings import Settings
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.gateway import GatewayCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.calls.settings import patch_settings, with_active_model

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
        self._ops = Ops(self)
        self._bridge = bridge
        self._gateway = GatewayCalls(bridge)
        self.models: list[GatewayModel] = []
        self.listed = GatewayModelList(models=[])
        self.active: str | None = None
        self.loaded = False
        # Listed when someone looks (the tray's menu opens, quick chat shows), not at connect.
        self._listing: Call | None = None
        # Asked again when the listing on its way was asked for before a change.
        self._again = False
        # Bumped by each choice: a listing asked for before it must not undo it.
        self._choices = 0
        # Bumped by each reset of the change feed: a listing asked for before one is stale.
        self._resets = 0
        # A model that starts, becomes ready or stops changes the list (and perhaps the
        # active one): the change feed tells it, nothing is asked again.
        bridge.gateway_changed.connect(self._on_gateway_changed)
        bridge.feed_reset.connect(self._on_feed_reset)

    def refresh(self, *, ask: bool = False) -> None:
        """The models and the active one: from the store when the change feed filled it
        (unless `ask`), else asked of the daemon once (a listing asked for since the last
        change is enough, one asked for before it is followed by another)."""
        held = self._bridge.gateway_models
        if held is not None and self._listing is None and not ask:
            self._on_listing_succeeded(held, self._choices)
            return
        if self._listing is not None:
            self._again = True
            return
        self._again = False
        choices, resets = self._choices, self._resets
        self._listing = call = self._gateway.models()
        self._ops.run(
            call,
            lambda listed: self._on_listed(listed, choices, resets),
            on_failure=self._on_call_failed,
        )
        call.finished.connect(self._on_listing_finished)

    def choose(self, model: str | None) -> Call:
        """Save `model` as settings.chat.active_model; answers with the Settings saved."""
        self._choices += 1
        call = patch_settings(self._bridge, "choose the active model", with_active_model(model))
        self._ops.run(call, self._on_choice_saved, on_failure=self._on_call_failed)
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

    def _on_listed(self, listed: GatewayModelList, choices: int, resets: int) -> None:
        if resets == self._resets and self._bridge.gateway_models is None:
            # The store keeps it for the next look, until the feed brings a newer one; a
            # listing asked for before a reset is not kept (the store was emptied as stale).
            self._bridge.gateway_models = listed
        self._on_listing_succeeded(listed, choices)

    def _on_listing_succeeded(self, listed: GatewayModelList, choices: int) -> None:
        self.models = list(listed.models)
        if choices == self._choices:
            self.active = listed.active_model
        self.listed = listed.model_copy(update={"active_model": self.active})
        self.loaded = True
        self.changed.emit()

    def _on_listing_finished(self) -> None:
        self._listing = None
        if self._again:
            self.refresh()

    def _on_gateway_changed(self, listed: GatewayModelList) -> None:
        """The gateway's models as the feed tells them; a listing on its way is older."""
        self._on_listing_succeeded(listed, self._choices)

    def _on_feed_reset(self) -> None:
        """Events may have been missed: list again, once someone has looked."""
        self._resets += 1
        if self.loaded:
            self.refresh()

    def _on_choice_saved(self, settings: Settings) -> None:
        self.active = settings.chat.active_model
        self.listed = self.listed.model_copy(update={"active_model": self.active})
        self.changed.emit()
        if not self.active:
            # None chosen: the daemon may name the one model running, which the gateway's
            # list need not change for (no event then): ask.
            self.refresh(ask=True)

    def _on_call_failed(self, failure: Failure) -> None:
        self.failed.emit(str(failure))
