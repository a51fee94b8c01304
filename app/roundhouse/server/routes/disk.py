"""Free space where models would be stored: the Settings page shows it beside the folder."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fastapi import APIRouter, Query

from roundhouse.api.hardware import DiskInfo
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.hardware.memory import read_disk
from roundhouse.core.models.library.places import hub_cache_dir

router = APIRouter(tags=["hardware"])


@router.get("/disk", response_model=DiskInfo)
async def disk_space(
    path: str = Query(
        default="",
        max_length=4096,
        description="a folder on the daemon's machine; empty means the Hugging Face cache",
    ),
) -> DiskInfo:
    """Space on the volume that holds (or would hold) `path`; the folder need not exist yet."""
    folder = hub_cache_dir(path)
    if not folder.is_absolute():
        raise InvalidInputError(f"Give the full path of a folder, not {path.strip()!r}.")
    found = await asyncio.to_thread(read_disk, Path(folder))
    if found is None:
        raise InvalidInputError(f"No disk holds {folder} on the daemon's machine.")
    return found
