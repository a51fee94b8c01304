"""The typed client of the daemon's API, used by the GUI and the CLI."""

from roundhouse.client.client import DaemonClient
from roundhouse.client.errors import (
    ApiError,
    ClientError,
    DaemonNotRunningError,
    DaemonUnreachableError,
)

__all__ = [
    "ApiError",
    "ClientError",
    "DaemonClient",
    "DaemonNotRunningError",
    "DaemonUnreachableError",
]
