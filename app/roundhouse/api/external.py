"""Schemas of engines Roundhouse did not start but can attach to (found running, or added)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from roundhouse.api.engines import EngineId


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AttachSource(StrEnum):
    # Ollama answered at OLLAMA_HOST (or its default 127.0.0.1:11434).
    OLLAMA_PORT = "ollama-port"
    # A process whose command line names an engine, probed on the port it listens on.
    PROCESS_SCAN = "process-scan"
    # An OpenAI-compatible URL the user gave (LM Studio, Jan, LocalAI, another machine).
    USER_ENDPOINT = "user-endpoint"


class ExternalEngine(_Frozen):
    """An engine that already serves: where, which process (when known), and what it serves."""

    engine: EngineId
    base_url: str = Field(description="scheme://host:port, without /v1")
    found_by: AttachSource
    healthy: bool = Field(description="its readiness probe answered 'ready'")
    status: str = Field(default="", description="in words: 'ready', 'loading (503)', ...")
    pid: int | None = None
    process_name: str | None = None
    cmdline: list[str] = Field(default=[], description="secret flag values shown as ***")
    version: str | None = None
    model_ids: list[str] = Field(default=[], description="what it serves (/v1/models, Ollama tags)")
    needs_api_key: bool = Field(default=False, description="its model list answered 401/403")
