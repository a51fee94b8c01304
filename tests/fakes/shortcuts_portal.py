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
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

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


@dataclass
class PortalBus:
    """`with PortalBus(tmp_path, mode) as bus:` a private bus (`bus.address`) with the
    portal stand-in on it (none with mode "absent"); `bus.calls()` and `bus.press()`."""

    folder: Path
    mode: str = "bind"

    def __post_init__(self) -> None:
        self.record = self.folder / "portal-calls.jsonl"
        self.address = ""
        self._processes: list[subprocess.Popen[str]] = []

    def __enter__(self) -> PortalBus:
        self.folder.mkdir(parents=True, exist_ok=True)
        daemon = subprocess.Popen(
            ["dbus-daemon", "--session", "--nofork", "--print-address"],
            stdout=subprocess.PIPE,
            text=True,
        )
        self._processes.append(daemon)
        assert daemon.stdout is not None
        self.address = daemon.stdout.readline().strip()
        assert self.address, "dbus-daemon printed no address"
        if self.mode == "absent":
            return self
        service = subprocess.Popen(
            [sys.executable, "-m", __name__, self.address, str(self.record), self.mode],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
        )
        self._processes.append(service)
        assert service.stdout is not None
        line = service.stdout.readline().strip()
        assert line == "ready", f"the portal stand-in did not start: {line!r}"
        return self

    def calls(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        lines = self.record.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def press(self) -> int:
        return press(self.address)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for process in reversed(self._processes):
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


if __name__ == "__main__":
    os.environ.pop("DBUS_SESSION_BUS_ADDRESS", None)
    serve(sys.argv[1], Path(sys.argv[2]), sys.argv[3])
