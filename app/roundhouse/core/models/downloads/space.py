"""Free disk space against what the queue still needs, and the words when it falls short."""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from roundhouse.core.models.downloads.errors import NotEnoughSpaceError

# Room to spare beyond the bytes still to come: metadata, other writers, a copy fallback.
SPACE_MARGIN = 1.2


class _Usage(Protocol):
    @property
    def free(self) -> int: ...


DiskUsage = Callable[[Path], _Usage]


def gigabytes(count: float) -> str:
    """Decimal GB, as disks are sold and file managers show: '12.3 GB'."""
    return f"{max(count, 0) / 1e9:.1f} GB"


def existing_folder(path: Path) -> Path:
    """`path`, or its nearest parent that exists (the cache may not be there yet)."""
    for candidate in (path, *path.parents):
        if candidate.is_dir():
            return candidate
    return path


def free_bytes(folder: Path, disk_usage: DiskUsage = shutil.disk_usage) -> int:
    return int(disk_usage(existing_folder(folder)).free)


def check_space(folder: Path, remaining: int, free: int, margin: float = SPACE_MARGIN) -> None:
    """NotEnoughSpaceError when `free` is under `margin` x the `remaining` bytes."""
    need = math.ceil(remaining * margin)
    if remaining > 0 and free < need:
        raise NotEnoughSpaceError(
            f"Not enough free space in {folder}: the download queue, with this, still needs "
            f"{gigabytes(remaining)} ({gigabytes(need)} with room to spare), and the disk has "
            f"{gigabytes(free)} free. Free {gigabytes(need - free)} or remove downloads from "
            "the queue, then try again."
        )


def disk_full_words(folder: Path, remaining: int, free: int, kept: int) -> str:
    """What a full disk mid-stream tells the user (the partial file is kept)."""
    short = max(math.ceil(remaining * SPACE_MARGIN) - free, 1)
    return (
        f"The disk holding {folder} is full: free {gigabytes(max(short, 1e8))} and resume. "
        f"The {gigabytes(kept)} downloaded so far are kept."
    )
