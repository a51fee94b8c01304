"""Notifications through org.freedesktop.Notifications on the session bus (jeepney, blocking).

Used on Linux desktops that have no tray (GNOME without its extension, a bare Wayland
session): each call connects, sends one Notify and waits for its answer, so it runs in a
worker thread. The address is the session bus's unless a caller names another (tests give a
private bus of their own).
"""

from __future__ import annotations

import os
from pathlib import Path

BUS_NAME = "org.freedesktop.Notifications"
OBJECT_PATH = "/org/freedesktop/Notifications"
# The answer of a notification service is immediate; a bus that holds the call longer is
# one to give up on rather than hold a thread.
CALL_TIMEOUT_S = 5.0


class NotifyError(Exception):
    """The notification was not delivered; str() says why in words."""


def session_bus_address() -> str | None:
    """The session bus's address: the environment's, else the per-user socket systemd makes."""
    address = os.environ.get("DBUS_SESSION_BUS_ADDRESS", "").strip()
    if address:
        return address
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and (Path(runtime) / "bus").exists():
        return f"unix:path={Path(runtime) / 'bus'}"
    return None


def notify(address: str, app_name: str, title: str, text: str, *, timeout_ms: int = -1) -> int:
    """Send one notification; the id the service gave it. Raises NotifyError."""
    # Imported here: jeepney is Linux-only (a dependency there) and this runs only there.
    from jeepney import DBusAddress, new_method_call  # type: ignore[import-untyped]
    from jeepney.io.blocking import open_dbus_connection  # type: ignore[import-untyped]
    from jeepney.wrappers import (  # type: ignore[import-untyped]
        DBusErrorResponse,
        unwrap_msg,
    )

    target = DBusAddress(OBJECT_PATH, bus_name=BUS_NAME, interface=BUS_NAME)
    # app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout.
    body: tuple[object, ...] = (app_name, 0, "roundhouse", title, text, [], {}, timeout_ms)
    message = new_method_call(target, "Notify", "susssasa{sv}i", body)
    try:
        with open_dbus_connection(address) as connection:
            reply = connection.send_and_get_reply(message, timeout=CALL_TIMEOUT_S)
        values = unwrap_msg(reply)
    except DBusErrorResponse as exc:
        raise NotifyError(f"The desktop's notification service refused it ({exc.name}).") from exc
    except (OSError, TimeoutError, ValueError, KeyError) as exc:
        raise NotifyError(
            "No notification service answered on the session bus: the desktop shows none."
        ) from exc
    return int(values[0]) if values else 0
