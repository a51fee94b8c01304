"""A STAND-IN for the desktop's notification service, on a private session bus of its own.

`NotificationBus` starts `dbus-daemon --session` (a bus no desktop uses) and this module as
a process that owns org.freedesktop.Notifications on it and writes each Notify call as a
line of JSON to a file, answering as a real service does (an id; GetCapabilities and
GetServerInformation too). Tests point the app at the bus's address and read the calls.

Run as `python -m tests.fakes.notifications ADDRESS RECORD_FILE`; it prints "ready" once it
owns the name.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.fakes.private_bus import PrivateBus

NAME = "org.freedesktop.Notifications"
READY_S = 15.0


def serve(address: str, record: Path) -> None:
    from jeepney import HeaderFields, MessageType, new_error, new_method_return
    from jeepney.bus_messages import message_bus
    from jeepney.io.blocking import open_dbus_connection

    connection = open_dbus_connection(address)
    # DO_NOT_QUEUE (4): the name at once or not at all.
    owned = connection.send_and_get_reply(message_bus.RequestName(NAME, 4), timeout=5)
    if owned.body[0] != 1:
        sys.exit(f"the bus gave {NAME} to someone else ({owned.body[0]})")
    print("ready", flush=True)
    count = 0
    while True:
        message = connection.receive()
        if message.header.message_type != MessageType.method_call:
            continue
        member = message.header.fields.get(HeaderFields.member)
        if member == "Notify":
            count += 1
            app, replaces, icon, summary, body, actions, _hints, timeout = message.body
            call = {
                "app_name": app,
                "replaces_id": replaces,
                "app_icon": icon,
                "summary": summary,
                "body": body,
                "actions": list(actions),
                "expire_timeout": timeout,
                "signature": message.header.fields.get(HeaderFields.signature),
            }
            with record.open("a", encoding="utf-8") as out:
                out.write(json.dumps(call) + "\n")
            connection.send(new_method_return(message, "u", (count,)))
        elif member == "GetCapabilities":
            connection.send(new_method_return(message, "as", (["body"],)))
        elif member == "GetServerInformation":
            info = ("stand-in", "roundhouse-tests", "1.0", "1.2")
            connection.send(new_method_return(message, "ssss", info))
        else:
            connection.send(new_error(message, "org.freedesktop.DBus.Error.UnknownMethod"))


class NotificationBus(PrivateBus):
    """`with NotificationBus(tmp_path) as bus:` a private bus (`bus.address`) whose
    notification service records what it is sent (`bus.calls()`)."""

    module = "tests.fakes.notifications"
    record_name = "notify-calls.jsonl"
    what = "the notification stand-in"


if __name__ == "__main__":
    os.environ.pop("DBUS_SESSION_BUS_ADDRESS", None)
    serve(sys.argv[1], Path(sys.argv[2]))
