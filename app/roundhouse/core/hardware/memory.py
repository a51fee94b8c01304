"""RAM and the free disk space of the models folder."""

from __future__ import annotations

from pathlib import Path

import psutil

from roundhouse.api.hardware import DiskInfo, MemoryInfo


def read_memory() -> MemoryInfo:
    memory = psutil.virtual_memory()
    return MemoryInfo(total_bytes=memory.total, available_bytes=memory.available)


def existing_ancestor(path: Path) -> Path | None:
    """The folder itself, or its nearest parent that exists (a models folder may not yet)."""
    candidate = path.expanduser().absolute()
    for folder in (candidate, *candidate.parents):
        if folder.is_dir():
            return folder
    return None


def read_disk(models_dir: Path) -> DiskInfo | None:
    """Space on the volume that holds (or will hold) the models folder."""
    folder = existing_ancestor(models_dir)
    if folder is None:
        return None
    try:
        usage = psutil.disk_usage(str(folder))
    except OSError:
        return None
    return DiskInfo(path=str(models_dir), total_bytes=usage.total, free_bytes=usage.free)
