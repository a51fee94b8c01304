"""Find the daemon of a home from its discovery and token files, without contacting it."""

from __future__ import annotations

from dataclasses import dataclass

import psutil

from roundhouse.api.daemon import Discovery
from roundhouse.api.discovery import read_discovery
from roundhouse.base.paths import Home
from roundhouse.client.errors import DaemonNotRunningError


@dataclass(frozen=True)
class Located:
    discovery: Discovery
    token: str


def locate(home: Home) -> Located:
    """The recorded daemon and its token, or DaemonNotRunningError saying why not."""
    discovery = read_discovery(home.discovery_file)
    if discovery is None:
        raise DaemonNotRunningError(f"No Roundhouse daemon is running for {home.label}.")
    if not psutil.pid_exists(discovery.pid):
        raise DaemonNotRunningError(
            f"No Roundhouse daemon is running for {home.label} (the daemon with pid "
            f"{discovery.pid} ended without cleaning up)."
        )
    try:
        token = home.token_file.read_text(encoding="ascii").strip()
    except OSError as exc:
        raise DaemonNotRunningError(
            f"The daemon's token file {home.token_file} cannot be read ({exc.strerror}). "
            "Restart the daemon with `roundhouse stop` and `roundhouse serve`."
        ) from exc
    return Located(discovery, token)
