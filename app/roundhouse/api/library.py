"""Schemas of the local model library: models found on disk and in Ollama, import, delete."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from roundhouse.api.engines import EngineId, ModelFormat


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LibrarySource(StrEnum):
    HF_CACHE = "hf_cache"  # the Hugging Face cache (what Roundhouse, vLLM, mlx-lm download)
    FOLDER = "folder"  # a folder the user added, or Roundhouse's folder of imported files
    LMSTUDIO = "lmstudio"  # LM Studio's models folder
    OLLAMA = "ollama"  # models pulled to Ollama, through its API


class LibraryModel(_Frozen):
    """One model a local engine can load."""

    id: str = Field(description="stable while the files stay where they are")
    served_id: str | None = Field(
        default=None,
        description="the short name requests use for it ('Qwen3-0.6B-Q4_K_M', 'qwen3:8b'): "
        "a file stem or repository name, never a path, unique in the library (ADR 24)",
    )
    name: str = Field(description="for display: 'Qwen/Qwen3-0.6B-GGUF Q4_K_M', 'qwen3:8b'")
    source: LibrarySource
    format: ModelFormat
    path: str | None = Field(
        default=None,
        description="what an engine loads: the GGUF file (the first shard of a split one), "
        "or the folder of a safetensors or MLX model; None for Ollama's models",
    )
    paths: list[str] = Field(default=[], description="every file or folder it is made of")
    projector: str | None = Field(
        default=None, description="a multimodal projector (mmproj) found beside it"
    )
    repo: str | None = Field(default=None, description="the Hub repository, when known")
    revision: str | None = Field(default=None, description="the commit, in the HF cache")
    refs: list[str] = Field(default=[], description="branches or tags naming that commit")
    architecture: str | None = None
    parameter_count: int | None = Field(
        default=None, description="every weight counted, once the whole header has been read"
    )
    parameter_label: str | None = Field(
        default=None,
        max_length=64,
        description="the size as the converter named it ('8B', '30B-A3B'), what lists show",
    )
    quantization: str | None = None
    context_length: int | None = None
    size_bytes: int = Field(default=0, ge=0, description="bytes on disk")
    engines: list[EngineId] = Field(default=[], description="engines that can serve it")
    modified: datetime | None = None
    error: str | None = Field(
        default=None, description="why it may not load (unreadable, malformed, incomplete)"
    )


class LibraryPlace(_Frozen):
    """A place the library looked in, and how that went."""

    source: LibrarySource
    location: str = Field(description="a folder, or Ollama's URL")
    available: bool
    models: int = 0
    error: str | None = None


class LibraryList(_Frozen):
    models: list[LibraryModel]
    places: list[LibraryPlace]
    scanned_at: datetime
    scan_seconds: float
    checking: int = Field(
        default=0,
        ge=0,
        description="GGUF files listed from their metadata whose whole header (the exact "
        "parameter count, a file cut short) is still being read; list again for the result",
    )


class ImportRequest(_Frozen):
    path: str = Field(min_length=1, description="a GGUF file on this machine")
    folder: str | None = Field(
        default=None,
        description="a library folder to put it in; None: Roundhouse's own folder of imports",
    )


class DeleteResult(_Frozen):
    """What deleting a model frees (or would free, for a dry run)."""

    id: str
    name: str
    freed_bytes: int = Field(ge=0)
    removed: list[str] = Field(default=[], description="files and folders removed")
    executed: bool = Field(description="False for a dry run")
    note: str | None = None
