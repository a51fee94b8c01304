"""Ollama's models as library entries, through its API (`/api/tags`, `/api/delete`)."""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from roundhouse.api.engines import EngineId, ModelFormat
from roundhouse.api.library import LibraryModel, LibrarySource
from roundhouse.api.ollama import OllamaModel
from roundhouse.core.engines.ollama_api import OllamaClient, ollama_base_url
from roundhouse.core.models.library.records import stable_id

SOURCE = LibrarySource.OLLAMA
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMBT]?)\s*$", re.IGNORECASE)
_SCALE = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


@dataclass(frozen=True)
class OllamaAccess:
    """How the library reaches Ollama: `location` for display, a lister and a deleter."""

    location: str
    list_models: Callable[[], Awaitable[Sequence[OllamaModel]]]
    delete_model: Callable[[str], Awaitable[None]]


def default_ollama_access(base_url: str | None = None, timeout_s: float = 3.0) -> OllamaAccess:
    """The Ollama at `base_url` (else OLLAMA_HOST, else 127.0.0.1:11434), a client per call,
    with a short timeout: a dead Ollama must not hold up the library."""
    url = base_url or ollama_base_url(os.environ.get("OLLAMA_HOST"))

    async def list_models() -> Sequence[OllamaModel]:
        async with OllamaClient(url, timeout_s=timeout_s) as client:
            return await client.list_models()

    async def delete_model(name: str) -> None:
        async with OllamaClient(url, timeout_s=30.0) as client:
            await client.delete(name)

    return OllamaAccess(url, list_models, delete_model)


def ollama_entry(model: OllamaModel) -> LibraryModel:
    details = model.details
    return LibraryModel(
        id=stable_id(SOURCE, model.name),
        name=model.name,
        source=SOURCE,
        format=ModelFormat.OLLAMA,
        architecture=details.family,
        parameter_count=parse_parameter_size(details.parameter_size),
        quantization=details.quantization_level,
        size_bytes=max(0, model.size),
        engines=[EngineId.OLLAMA],
        modified=model.modified_at,
    )


def parse_parameter_size(text: str | None) -> int | None:
    """Ollama's "7.6B", "494.03M", "1.2T" as a count; None when it says something else."""
    found = _SIZE.match(text or "")
    if found is None:
        return None
    return round(float(found.group(1)) * _SCALE[found.group(2).upper()]) or None
