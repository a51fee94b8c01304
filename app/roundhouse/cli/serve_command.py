"""`roundhouse serve`: run the daemon in this process."""

from __future__ import annotations

from roundhouse.base.paths import Home
from roundhouse.cli.output import fail
from roundhouse.server.daemon import DaemonStartError, ServeOptions, print_ready, run_daemon


def serve_foreground(home: Home, *, host: str | None, port: int | None) -> int:
    try:
        return run_daemon(home, ServeOptions(host=host, port=port), on_ready=print_ready)
    except DaemonStartError as exc:
        fail(str(exc))
