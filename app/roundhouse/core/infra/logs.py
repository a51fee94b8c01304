"""Logging to rotating files in the log folder."""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

LOG_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


def configure_logging(log_dir: Path, name: str, *, level: int = logging.INFO) -> Path:
    """Send the root logger to `log_dir/name.log`, rotated at 5 MB, 5 files kept."""
    log_dir.mkdir(parents=True, exist_ok=True)
    path = log_dir / f"{name}.log"
    handler = logging.handlers.RotatingFileHandler(
        path, maxBytes=5 * 1024 * 1024, backupCount=5, encoding="utf-8"
    )
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.setLevel(level)
    # Replacing (not adding) keeps repeated configuration in tests from duplicating lines.
    for old in list(root.handlers):
        if isinstance(old, logging.handlers.RotatingFileHandler):
            root.removeHandler(old)
            old.close()
    root.addHandler(handler)
    # httpx and httpcore log every request they make at INFO/DEBUG: the gateway makes one
    # per relayed request, health probes one every few seconds. Their warnings still count.
    for chatty in ("httpx", "httpcore"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    return path
