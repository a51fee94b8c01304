"""The states of the link to the daemon (kept light: the first paint imports it)."""

from __future__ import annotations

from enum import StrEnum


class ConnectionState(StrEnum):
    CONNECTING = "connecting"
    STARTING = "starting"
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"
