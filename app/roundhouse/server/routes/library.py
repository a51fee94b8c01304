"""Routes of the local model library: list, import a GGUF file, delete with disk accounting."""

from __future__ import annotations

from fastapi import APIRouter, Query

from roundhouse.api.library import DeleteResult, ImportRequest, LibraryList, LibraryModel
from roundhouse.server.deps import Services

router = APIRouter(prefix="/library", tags=["library"])


@router.get("", response_model=LibraryList)
async def listing(services: Services) -> LibraryList:
    """Local models from the Hugging Face cache, the user's folders, LM Studio and Ollama."""
    return await services.library_service().scan()


@router.get("/{model_id}", response_model=LibraryModel)
async def model(model_id: str, services: Services) -> LibraryModel:
    return await services.library_service().get(model_id)


@router.post("/import", response_model=LibraryModel, status_code=201)
async def import_gguf(request: ImportRequest, services: Services) -> LibraryModel:
    """Copy (or hard-link) a GGUF file into the library after checking its header."""
    return await services.library_service().import_gguf(request)


@router.delete("/{model_id}", response_model=DeleteResult)
async def delete(
    model_id: str,
    services: Services,
    dry_run: bool = Query(default=False, description="say what would be freed, delete nothing"),
) -> DeleteResult:
    """Delete a model's files (what no other model uses) and say how much was freed."""
    return await services.library_service().delete(model_id, dry_run=dry_run)
