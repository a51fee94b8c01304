"""The typed client of the daemon's API, used by the GUI and the CLI."""

import sys

# WORKAROUND: `import httpx` also imports its own command-line tool, and with it click, rich
# and pygments, whenever they are installed (as click and rich are for our CLI). That is
# 80 modules and about 10 MB in the desktop app, which never uses them. Marking the module
# missing makes httpx skip it. Fixed upstream by a lazy import:
# https://github.com/pydantic/httpx2/pull/947
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

from roundhouse.client.client import DaemonClient  # noqa: E402 - after the workaround
from roundhouse.client.errors import (  # noqa: E402
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
