"""A STAND-IN for the desktop portal's GlobalShortcuts interface, on a private session bus.

`PortalBus` starts `dbus-daemon --session` (a bus no desktop uses) and this module as a
process that owns org.freedesktop.portal.Desktop there and answers as xdg-desktop-portal
does: CreateSession and BindShortcuts reply with a request path, then send that Request's
Response signal (the session; the shortcuts bound, each with a trigger_description). Each
call is written as a line of JSON. Its own method org.roundhouse.Test.Press makes it send
Activated for the bound shortcut, as a desktop does when the user presses the key.

`mode`: "bind" answers with the trigger asked for; "bind-other" binds another one (a user
who chose their own in the desktop's dialog); "cancel" answers BindShortcuts with response 1
(the dialog was cancelled).

Run as `python -m tests.fakes.shortcuts_portal ADDRESS RECORD_FILE MODE`; it prints "ready"
once it owns the name.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.fakes.private_bus import PrivateBus

NAME = "org.freedesktop.portal.Desktop"
PATH = "/org/freedesktop/portal/desktop"
SHORTCUTS = "org.freedesktop.portal.GlobalShortcuts"
TEST = "org.roundhouse.Test"
OTHER_TRIGGER = "LOGO+q"


def serve(address: str, record: Path, mode: str) -> None:
    from jeepney import (
        DBusAddress,
        HeaderFields,
        MessageType,
        new_error,
        new_method_return,
        new_signal,
    )
    from jeepney.bus_messages import message_bus
    from jeepney.io.blocking import open_dbus_connection

    connection = open_dbus_connection(address)
    owned = connection.send_and_get_reply(message_bus.RequestName(NAME, 4), timeout=5)
    if owned.body[0] != 1:
        sys.exit(f"the bus gave {NAME} to someone else ({owned.body[0]})")
    print("ready", flush=True)
    sessions: dict[str, str] = {}  # session path -> the client's unique name
    bound: dict[str, str] = {}  # session path -> shortcut id

    def write(call: dict[str, Any]) -> None:
        with record.open("a", encoding="utf-8") as out:
            out.write(json.dumps(call) + "\n")

    def respond(message: Any, token: str, code: int, results: dict[str, Any]) -> None:
        sender = str(message.header.fields[HeaderFields.sender])
        path = f"{PATH}/request/{sender.lstrip(':').replace('.', '_')}/{token}"
        connection.send(new_method_return(message, "o", (path,)))
        request = DBusAddress(path, interface="org.freedesktop.portal.Request")
        connection.send(new_signal(request, "Response", "ua{sv}", (code, results)))

    while True:
        message = connection.receive()
        if message.header.message_type != MessageType.method_call:
            continue
        fields = message.header.fields
        member, interface = fields.get(HeaderFields.member), fields.get(HeaderFields.interface)
        if interface == "org.freedesktop.DBus.Properties" and member == "Get":
            if message.body == (SHORTCUTS, "version"):
                connection.send(new_method_return(message, "v", (("u", 1),)))
            else:
                connection.send(new_error(message, "org.freedesktop.DBus.Error.UnknownProperty"))
        elif member == "CreateSession":
            (options,) = message.body
            sender = str(fields[HeaderFields.sender])
            session = (
                f"{PATH}/session/{sender.lstrip(':').replace('.', '_')}/"
                f"{options['session_handle_token'][1]}"
            )
            sessions[session] = sender
            write({"call": "CreateSession", "options": sorted(options)})
            respond(message, options["handle_token"][1], 0, {"session_handle": ("s", session)})
        elif member == "BindShortcuts":
            session, shortcuts, _parent, options = message.body
            calls = [{"id": i, **{k: v[1] for k, v in d.items()}} for i, d in shortcuts]
            write({"call": "BindShortcuts", "session": session, "shortcuts": calls})
            if mode == "cancel" or session not in sessions:
                respond(message, options["handle_token"][1], 1, {})
                continue
            answer = []
            for shortcut_id, details in shortcuts:
                trigger = OTHER_TRIGGER if mode == "bind-other" else details["preferred_trigger"][1]
                answer.append(
                    (
                        shortcut_id,
                        {
                            "description": details["description"],
                            "trigger_description": ("s", trigger),
                        },
                    )
                )
                bound[session] = shortcut_id
            respond(message, options["handle_token"][1], 0, {"shortcuts": ("a(sa{sv})", answer)})
        elif interface == TEST and member == "Press":
            portal = DBusAddress(PATH, interface=SHORTCUTS)
            for session, shortcut_id in bound.items():
                body = (session, shortcut_id, 0, {})
                connection.send(new_signal(portal, "Activated", "osta{sv}", body))
            connection.send(new_method_return(message, "u", (len(bound),)))
        else:
            connection.send(new_error(message, "org.freedesktop.DBus.Error.UnknownMethod"))


def press(address: str) -> int:
    """As the user pressing the bound key: the stand-in sends Activated; how many it sent."""
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    target = DBusAddress(PATH, bus_name=NAME, interface=TEST)
    with open_dbus_connection(address) as connection:
        reply = connection.send_and_get_reply(new_method_call(target, "Press"), timeout=5)
    return int(reply.body[0])


class PortalBus(PrivateBus):
    """`with PortalBus(tmp_path, mode) as bus:` a private bus (`bus.address`) with the
    portal stand-in on it (none with mode "absent"); `bus.calls()` and `bus.press()`."""

    module = "tests.fakes.shortcuts_portal"
    record_name = "portal-calls.jsonl"
    what = "the portal stand-in"

    def __init__(self, folder: Path, mode: str = "bind") -> None:
        super().__init__(folder)
        self.mode = mode

    def service_args(self) -> list[str] | None:
        return None if self.mode == "absent" else [self.mode]

    def press(self) -> int:
        return press(self.address)


if __name__ == "__main__":
    os.environ.pop("DBUS_SESSION_BUS_ADDRESS", None)
    serve(sys.argv[1], Path(sys.argv[2]), sys.argv[3])
