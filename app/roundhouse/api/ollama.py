"""Schemas of what an Ollama server reports: local models, pulls, shown and loaded models."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    # Strict towards our own callers; the Ollama client picks the known fields out of Ollama's
    # answers before building these, so a field a newer Ollama adds is never an error.
    model_config = ConfigDict(frozen=True, extra="forbid")


class OllamaModelDetails(_Frozen):
    """`details` of a model, as /api/tags, /api/show and /api/ps report it."""

    format: str | None = Field(default=None, description="'gguf' for the usual models")
    family: str | None = None
    families: list[str] = []
    parameter_size: str | None = Field(default=None, description="in words: '7.6B', '494.03M'")
    quantization_level: str | None = Field(default=None, description="'Q4_K_M', 'F16'")
    parent_model: str | None = None


class OllamaModel(_Frozen):
    """A model pulled to this Ollama (one entry of /api/tags)."""

    name: str = Field(description="the tag, 'qwen2.5:7b'")
    size: int = Field(description="bytes on disk")
    digest: str
    modified_at: datetime | None = None
    details: OllamaModelDetails = OllamaModelDetails()


class OllamaPullProgress(_Frozen):
    """One line of a pull's progress; `completed` is absent in a layer's first line."""

    status: str = Field(description="'pulling manifest', 'pulling <digest>', ..., 'success'")
    digest: str | None = None
    total: int | None = Field(default=None, description="bytes of this layer")
    completed: int | None = Field(default=None, description="bytes of this layer so far")

    @property
    def done(self) -> bool:
        return self.status == "success"

    @property
    def fraction(self) -> float | None:
        """Share of the current layer downloaded (0..1), when Ollama says."""
        if not self.total:
            return None
        return min(1.0, (self.completed or 0) / self.total)


class OllamaShownModel(_Frozen):
    """What /api/show says of one model: its GGUF metadata, template and abilities."""

    name: str
    details: OllamaModelDetails = OllamaModelDetails()
    model_info: dict[str, Any] = Field(
        default={}, description="GGUF keys: 'general.architecture', '<arch>.context_length'..."
    )
    parameters: str | None = Field(default=None, description="Modelfile PARAMETER lines")
    template: str | None = None
    capabilities: list[str] = Field(default=[], description="'completion', 'tools', 'embedding'")
    license: str | None = None
    modified_at: datetime | None = None

    @property
    def architecture(self) -> str | None:
        arch = self.model_info.get("general.architecture")
        return arch if isinstance(arch, str) else None

    @property
    def context_length(self) -> int | None:
        """The context the model was trained for (`<arch>.context_length`)."""
        value = self.model_info.get(f"{self.architecture}.context_length")
        return value if isinstance(value, int) and not isinstance(value, bool) else None


class OllamaLoadedModel(_Frozen):
    """A model Ollama holds in memory (one entry of /api/ps)."""

    name: str
    size: int = Field(description="bytes in memory, weights and KV cache")
    size_vram: int = Field(description="of `size`, bytes in GPU memory")
    digest: str | None = None
    details: OllamaModelDetails = OllamaModelDetails()
    expires_at: datetime | None = Field(
        default=None, description="when it unloads; a date centuries ahead means never"
    )
    context_length: int | None = Field(default=None, description="reported by newer Ollamas")

    @property
    def gpu_share(self) -> float:
        """Share of the model in GPU memory: 1.0 all on the GPU, 0.0 all on the CPU."""
        return self.size_vram / self.size if self.size else 0.0


class OllamaModelList(_Frozen):
    """`GET /api/v1/ollama/models`: the models of the Ollama at `base_url`."""

    base_url: str
    models: list[OllamaModel]


class OllamaLoadedList(_Frozen):
    """`GET /api/v1/ollama/ps`: what that Ollama holds in memory now."""

    base_url: str
    models: list[OllamaLoadedModel]


class OllamaPullRequest(_Frozen):
    model: str = Field(min_length=1, description="a tag such as 'qwen2.5:0.5b'")


class OllamaLoadRequest(_Frozen):
    model: str = Field(min_length=1)
    keep_alive: str | int | None = Field(
        default=None, description="seconds, a duration such as '10m', or -1 to keep it loaded"
    )
    context_length: int | None = Field(default=None, ge=1)


class OllamaModelRef(_Frozen):
    model: str = Field(min_length=1)
