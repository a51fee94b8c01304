"""The discovery file: how clients find the daemon that serves a home."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from roundhouse.api.daemon import Discovery
from roundhouse.base.files import write_atomic


def read_discovery(path: Path) -> Discovery | None:
    """The recorded daemon, or None when there is no file or it is unreadable."""
    try:
        return Discovery.model_validate_json(path.read_bytes())
    except (FileNotFoundError, ValidationError, ValueError):
        # A half-written or foreign file is treated like no file: the daemon rewrites it.
        return None


def write_discovery(path: Path, discovery: Discovery) -> None:
    """Write atomically, so a client never reads half a file."""
    write_atomic(path, discovery.model_dump_json(indent=2).encode("utf-8"))
