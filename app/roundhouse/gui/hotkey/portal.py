"""The global key on Wayland: the desktop portal's GlobalShortcuts interface on the session
bus (jeepney on the app's asyncio loop) where the desktop offers it; otherwise the words say
how to bind the desktop's own shortcut to `roundhouse quick-chat`."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from typing import Any

from PySide6.QtCore import QObject

from roundhouse.api.shortcut import Shortcut
from roundhouse.gui.hotkey.backend import HotkeyBackend
from roundhouse.gui.hotkey.keycodes import xdg_trigger
from roundhouse.gui.hotkey.wayland import bind_it_yourself, not_bound

log = logging.getLogger(__name__)

PORTAL_NAME = "org.freedesktop.portal.Desktop"
PORTAL_PATH = "/org/freedesktop/portal/desktop"
SHORTCUTS = "org.freedesktop.portal.GlobalShortcuts"
REQUEST = "org.freedesktop.portal.Request"
SESSION = "org.freedesktop.portal.Session"
SHORTCUT_ID = "quick-chat"
DESCRIPTION = "Open Roundhouse's quick chat"
# The portal may ask the user (a dialog) before it answers a bind.
ANSWER_S = 120.0
_tokens = itertools.count(1)


class PortalRefusal(Exception):
    """The portal answered, but no: str() says what happened and what to do."""


class ShortcutsPortal:
    """One connection to the portal, one session, one shortcut bound (Qt-free, asyncio)."""

    def __init__(self, address: str) -> None:
        self._address = address
        self._connection: Any = None
        self._router: Any = None
        self.session = ""

    async def open(self) -> None:
        from jeepney.io.asyncio import (  # type: ignore[import-untyped,unused-ignore]
            DBusRouter,
            open_dbus_connection,
        )

        self._connection = await open_dbus_connection(self._address)
        self._router = DBusRouter(self._connection)

    async def close(self) -> None:
        # The portal closes the session with the connection that made it.
        if self._router is not None:
            await self._router.__aexit__(None, None, None)
        if self._connection is not None:
            await self._connection.close()
        self._router = self._connection = None

    async def offered(self) -> bool:
        """Whether the desktop's portal has GlobalShortcuts (its `version` answers)."""
        from jeepney import DBusAddress, MessageType, Properties  # type: ignore[import-untyped,unused-ignore]

        portal = DBusAddress(PORTAL_PATH, bus_name=PORTAL_NAME, interface=SHORTCUTS)
        reply = await self._router.send_and_get_reply(Properties(portal).get("version"))
        return bool(reply.header.message_type == MessageType.method_return)

    async def bind(self, trigger: str) -> str:
        """Create a session and bind quick chat's shortcut, `trigger` preferred; the trigger
        the desktop describes it with (its user may have chosen another)."""
        token = f"roundhouse_{next(_tokens)}"
        results = await self._request(
            "CreateSession",
            "a{sv}",
            ({"handle_token": ("s", token), "session_handle_token": ("s", token)},),
            token,
        )
        handle = results.get("session_handle")
        if handle is None:
            raise PortalRefusal("the desktop's portal made no shortcut session")
        self.session = str(handle[1])
        token = f"roundhouse_{next(_tokens)}"
        shortcut = (
            SHORTCUT_ID,
            {"description": ("s", DESCRIPTION), "preferred_trigger": ("s", trigger)},
        )
        results = await self._request(
            "BindShortcuts",
            "oa(sa{sv})sa{sv}",
            (self.session, [shortcut], "", {"handle_token": ("s", token)}),
            token,
        )
        for name, details in results.get("shortcuts", ("", []))[1]:
            if name == SHORTCUT_ID:
                given = details.get("trigger_description", ("s", ""))[1]
                return str(given or trigger)
        raise PortalRefusal("the desktop did not bind the shortcut")

    async def activations(self) -> Any:
        """Each press of the bound shortcut, for as long as the session lasts."""
        from jeepney import MatchRule  # type: ignore[import-untyped,unused-ignore]

        rule = MatchRule(type="signal", interface=SHORTCUTS, member="Activated", path=PORTAL_PATH)
        await self._add_match(rule)
        with self._router.filter(rule, bufsize=16) as presses:
            while True:
                message = await presses.get()
                session, shortcut_id = message.body[0], message.body[1]
                if session == self.session and shortcut_id == SHORTCUT_ID:
                    yield None

    async def _request(self, method: str, signature: str, body: tuple[Any, ...], token: str) -> Any:
        """A portal call answered by a Request's Response signal: its results, or a refusal."""
        from jeepney import DBusAddress, MatchRule, MessageType, new_method_call  # type: ignore[import-untyped,unused-ignore]

        sender = self._router.unique_name.lstrip(":").replace(".", "_")
        path = f"{PORTAL_PATH}/request/{sender}/{token}"
        rule = MatchRule(type="signal", interface=REQUEST, member="Response", path=path)
        # Listening before the call: the answer may come right after its reply.
        await self._add_match(rule)
        portal = DBusAddress(PORTAL_PATH, bus_name=PORTAL_NAME, interface=SHORTCUTS)
        with self._router.filter(rule) as answers:
            reply = await self._router.send_and_get_reply(
                new_method_call(portal, method, signature, body)
            )
            if reply.header.message_type != MessageType.method_return:
                raise PortalRefusal(f"the desktop's portal refused {method} ({reply.body})")
            response = await asyncio.wait_for(answers.get(), ANSWER_S)
        code, results = response.body
        if code == 1:
            raise PortalRefusal("the desktop's dialog was cancelled")
        if code != 0:
            raise PortalRefusal(f"the desktop's portal ended {method} without binding it")
        return results

    async def _add_match(self, rule: Any) -> None:
        from jeepney.bus_messages import message_bus  # type: ignore[import-untyped,unused-ignore]

        await self._router.send_and_get_reply(message_bus.AddMatch(rule))


class PortalHotkey(HotkeyBackend):
    """Binds through the portal in a task; its outcome comes by `settled`."""

    name = "Wayland"
    asynchronous = True

    def __init__(self, address: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._address = address
        self._task: asyncio.Task[None] | None = None
        # How the desktop describes the trigger it bound (it may differ from the one asked).
        self.bound_as = ""

    def register(self, shortcut: Shortcut) -> str | None:
        self.unregister()
        self._task = asyncio.get_event_loop().create_task(self._hold(shortcut))
        return None

    def unregister(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self._task = None
        self.bound_as = ""

    async def _hold(self, shortcut: Shortcut) -> None:
        portal = ShortcutsPortal(self._address)
        try:
            await portal.open()
            if not await portal.offered():
                self.settled.emit(bind_it_yourself(shortcut))
                return
            self.bound_as = await portal.bind(xdg_trigger(shortcut))
            self.settled.emit("")
            async for _ in portal.activations():
                self.activated.emit()
        except PortalRefusal as exc:
            self.settled.emit(not_bound(shortcut, str(exc)))
        except (OSError, EOFError, TimeoutError, ValueError, KeyError) as exc:
            log.info("the GlobalShortcuts portal did not answer: %s", exc)
            self.settled.emit(bind_it_yourself(shortcut))
        finally:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                await portal.close()
