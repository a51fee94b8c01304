"""Routes of the local model library: list, import a GGUF file, delete with disk accounting."""

from __future__ import annotations

import os

from fastapi import APIRouter, Query

from roundhouse.api.library import DeleteResult, ImportRequest, LibraryList, LibraryModel
from roundhouse.core.errors import ConflictError
from roundhouse.core.instances.service import InstanceService
from roundhouse.server.deps import Instances, Library, ModelsOpen

router = APIRouter(prefix="/library", tags=["library"], dependencies=[ModelsOpen])


@router.get("", response_model=LibraryList)
async def listing(library: Library) -> LibraryList:
    """Local models from the Hugging Face cache, the user's folders, LM Studio and Ollama."""
    return await library.scan()


@router.get("/{model_id}", response_model=LibraryModel)
async def model(model_id: str, library: Library) -> LibraryModel:
    return await library.get(model_id)


@router.post("/import", response_model=LibraryModel, status_code=201)
async def import_gguf(request: ImportRequest, library: Library) -> LibraryModel:
    """Copy (or hard-link) a GGUF file into the library after checking its header."""
    return await library.import_gguf(request)


@router.delete("/{model_id}", response_model=DeleteResult)
async def delete(
    model_id: str,
    library: Library,
    instances: Instances,
    dry_run: bool = Query(default=False, description="say what would be freed, delete nothing"),
) -> DeleteResult:
    """Delete a model's files (what no other model uses) and say how much was freed. A model
    a running instance has loaded is refused: stop the instance first."""
    if not dry_run:
        _refuse_if_loaded(await library.get(model_id), instances)
    return await library.delete(model_id, dry_run=dry_run)


def _refuse_if_loaded(model: LibraryModel, instances: InstanceService) -> None:
    files = {_same(p) for p in [model.path or "", *model.paths] if p}
    for info in instances.all(memory=False):
        loaded = info.options.model if info.options else None
        if loaded and _same(loaded) in files:
            raise ConflictError(
                f"{model.name} is loaded by instance {info.id} ({info.engine.value}): stop it "
                "first, then delete the model."
            )


def _same(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))
