"""The short name each library model is served by: a file stem or a repository's name.

A request's `model` must be something a person can type and a client can keep: never a
file path, the same on every scan while the same models are there (ADR 24). The name comes
from the model itself (a GGUF file's stem without its shard suffix, a repository's or
folder's name, Ollama's tag); two models with the same name are told apart by their
source, then by the start of their library id, the first in a fixed order keeping the
bare name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePath

from roundhouse.api.engines import ModelFormat
from roundhouse.api.library import LibraryModel, LibrarySource

# `model-00001-of-00003.gguf` is one model in three parts: named once, without the count.
_SHARD = re.compile(r"-\d{5}-of-\d{5}$")
_SPACES = re.compile(r"\s+")
# Which source keeps a bare name two sources share: what Roundhouse downloads first.
_RANK = {
    LibrarySource.HF_CACHE: 0,
    LibrarySource.FOLDER: 1,
    LibrarySource.LMSTUDIO: 2,
    LibrarySource.OLLAMA: 3,
}
_SOURCE_WORD = {
    LibrarySource.HF_CACHE: "hf",
    LibrarySource.FOLDER: "folder",
    LibrarySource.LMSTUDIO: "lmstudio",
    LibrarySource.OLLAMA: "ollama",
}


def file_stem(path: str) -> str:
    """A GGUF file's name without `.gguf` and without a split file's part count."""
    name = PurePath(path).name
    if name.lower().endswith(".gguf"):
        name = name[: -len(".gguf")]
    return _SHARD.sub("", name)


def base_name(model: LibraryModel) -> str:
    """The model's own name, before telling equal ones apart."""
    if model.source == LibrarySource.OLLAMA:
        name = model.name
    elif model.format == ModelFormat.GGUF and model.path:
        name = file_stem(model.path)
    elif model.repo:
        name = model.repo.rsplit("/", 1)[-1]
    elif model.path:
        name = PurePath(model.path).name
    else:
        name = model.name
    # Spaces would need quoting in every shell and header: a dash reads the same.
    return _SPACES.sub("-", name.strip()) or model.id


def served_ids(models: Sequence[LibraryModel]) -> dict[str, str]:
    """Library id -> short served id, unique (case-insensitively) across `models`."""
    ordered = sorted(models, key=lambda m: (_RANK.get(m.source, 9), m.id))
    out: dict[str, str] = {}
    taken: set[str] = set()
    for model in ordered:
        base = base_name(model)
        for candidate in (
            base,
            f"{base}-{_SOURCE_WORD.get(model.source, model.source.value)}",
            f"{base}-{model.id[:6]}",
            f"{base}-{model.id}",
        ):
            if candidate.casefold() not in taken:
                break
        taken.add(candidate.casefold())
        out[model.id] = candidate
    return out


def with_served_ids(models: Sequence[LibraryModel]) -> list[LibraryModel]:
    """The same models, each with its `served_id` filled in."""
    ids = served_ids(models)
    return [m.model_copy(update={"served_id": ids[m.id]}) for m in models]
