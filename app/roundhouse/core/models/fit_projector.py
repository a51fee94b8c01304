"""The fit estimate counts a vision projector (mmproj) where llama-server puts it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from roundhouse.api.engines import InstanceOptions
from roundhouse.api.fit import FitOptions
from roundhouse.api.library import LibraryModel
from roundhouse.core.engines.projector import NONE, projector_beside

MIB = 1024 * 1024


def _projector(instance: InstanceOptions | None, model: LibraryModel) -> Path | None:
    """The projector a start would load: as chosen, else the one beside the model."""
    chosen = instance.mmproj if instance is not None else None
    if chosen is not None:
        return None if chosen.strip().lower() == NONE else Path(chosen).expanduser()
    if model.projector:
        return Path(model.projector)
    return projector_beside(Path(model.path)) if model.path else None


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size if path.is_file() else None
    except OSError:
        return None


async def projector_cost(
    instance: InstanceOptions | None, options: FitOptions, model: LibraryModel
) -> tuple[FitOptions, list[str]]:
    """`options` with the projector's weights added where a draft model's go (mtmd loads it
    on the first GPU used, else in RAM), and a note that says so."""
    if not (model.path or "").lower().endswith(".gguf"):
        return options, []
    path = _projector(instance, model)
    size = await asyncio.to_thread(_size, path) if path is not None else None
    if path is None or size is None:
        return options, []
    update = {"draft_bytes": options.draft_bytes + size}
    note = (
        f"The vision projector {path.name} ({size / MIB:,.0f} MiB) is counted on the first GPU "
        "used, as llama-server loads it; choose none as the projector to leave it out."
    )
    return options.model_copy(update=update), [note]
