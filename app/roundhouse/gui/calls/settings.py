"""The daemon's settings: read them, or change one part of them and save them whole.

The tray and the quick chat change one field at a time; reading the settings just before
saving keeps what another window (the Settings page) saved in between.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from roundhouse.api.settings import Settings
from roundhouse.gui.call import Call

if TYPE_CHECKING:
    from roundhouse.client import DaemonClient
    from roundhouse.gui.daemon_bridge import DaemonBridge

# One patch at a time per bridge: two read-change-save rounds that overlap (two switches
# flipped quickly) would each save over the other's change.
_turns: weakref.WeakKeyDictionary[DaemonBridge, asyncio.Lock] = weakref.WeakKeyDictionary()


class SettingsCalls:
    """The daemon's settings, read. Saving goes through `patch_settings`,
    which applies a change onto the settings as they are at that moment."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    def get(self) -> Call:
        """Answers with the Settings in force."""
        return self._bridge.call("read the settings", lambda c: c.settings())

    def disk_space(self, path: str) -> Call:
        """Answers with the DiskInfo of the volume `path` is on (or would be)."""
        return self._bridge.call("read the free disk space", lambda c: c.disk_space(path))


def patch_settings(bridge: DaemonBridge, what: str, change: Callable[[Settings], Settings]) -> Call:
    """Answers with the Settings saved; a refusal (422, or start at login failing) in words."""

    turn = _turns.setdefault(bridge, asyncio.Lock())

    async def request(client: DaemonClient) -> Settings:
        async with turn:
            current = await client.settings()
            return await client.put_settings(change(current))

    def saved(result: Settings) -> None:
        bridge.set_ui_settings(result.ui)

    return bridge.call(what, request, saved)


def with_ui(**changes: object) -> Callable[[Settings], Settings]:
    """A change of the `ui` part: `with_ui(start_at_login=True)`."""

    def change(settings: Settings) -> Settings:
        return settings.model_copy(update={"ui": settings.ui.model_copy(update=changes)})

    return change


def with_active_model(model: str | None) -> Callable[[Settings], Settings]:
    def change(settings: Settings) -> Settings:
        chat = settings.chat.model_copy(update={"active_model": model})
        return settings.model_copy(update={"chat": chat})

    return change
