"""Schemas of the first-run guide: the engine to set up, the starter models, serving one."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from roundhouse.api.engines import EngineId
from roundhouse.api.fit import FitVerdict
from roundhouse.api.instances import InstanceInfo
from roundhouse.base.units import format_bytes


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# The engines the guide sets up: small models on one machine. vLLM and SGLang serve many
# users on big GPUs, which is not where a first run starts.
GUIDE_ENGINES = (EngineId.LLAMA_CPP, EngineId.MLX, EngineId.OLLAMA)


class EngineSetupState(StrEnum):
    READY = "ready"  # installed: nothing to do
    INSTALL = "install"  # Roundhouse installs it (llama.cpp's build, mlx-lm's environment)
    EXTERNAL = "external"  # the user installs it with its own installer (Ollama)


class SetupCost(_Frozen):
    """What a step takes, roughly: bytes to download, disk used after, minutes."""

    download_bytes: int = Field(default=0, ge=0)
    disk_bytes: int = Field(default=0, ge=0)
    seconds: float | None = Field(default=None, description="None when it cannot be told")
    note: str = ""

    def in_words(self) -> str:
        """'379.6 MiB to download, 379.6 MiB on disk, about 1 min at 50 Mbit/s'."""
        parts = []
        if self.download_bytes:
            parts.append(f"{format_bytes(self.download_bytes)} to download")
        if self.disk_bytes:
            parts.append(f"{format_bytes(self.disk_bytes)} on disk")
        if self.seconds is not None:
            at = f" {self.note}" if self.note.startswith("at ") else ""
            parts.append(f"{about(self.seconds)}{at}")
        return ", ".join(parts)


def about(seconds: float) -> str:
    """A duration as people estimate one: 'under a minute', 'about 3 min', 'about 1 h 20 min'."""
    minutes = round(seconds / 60)
    if minutes < 1:
        return "under a minute"
    if minutes < 60:
        return f"about {minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"about {hours} h {rest} min" if rest else f"about {hours} h"


class EngineChoice(_Frozen):
    """One engine the guide can use, ranked for this machine, and what using it takes."""

    engine: EngineId
    title: str = Field(description="'llama.cpp (CUDA)', as the recommendation names it")
    rank: int = Field(ge=1)
    reason: str = Field(description="why it suits this machine, in its own figures")
    state: EngineSetupState
    detail: str = Field(description="in words: where it is installed, or what installing does")
    version: str | None = None
    cost: SetupCost | None = Field(default=None, description="of installing it; None if ready")
    install_url: str | None = Field(default=None, description="its own installer (Ollama)")


class SetupGuide(_Frozen):
    """`GET /api/v1/setup`: the machine in one line and the engines to choose from."""

    hardware: str = Field(description="'AMD Ryzen 7 with 16 threads, 31.2 GiB RAM, no GPU'")
    disk_free_bytes: int | None = Field(default=None, description="where models are stored")
    engines: list[EngineChoice] = Field(description="best first")
    recommended: EngineId
    first_run_done: bool


class StarterShape(_Frozen):
    """A model's shape as its config.json says: enough to estimate memory offline."""

    layers: int = Field(ge=1)
    embedding: int = Field(ge=1)
    heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    context: int = Field(ge=1)
    feed_forward: int = Field(default=0, ge=0)
    vocab: int = Field(default=0, ge=0)
    tied: bool = Field(default=False, description="the output head is the embedding table")


class GgufFile(_Frozen):
    repo: str
    file: str
    quant: str
    size_mb: int = Field(ge=1, description="approximate, in 10^6 bytes")


class MlxRepo(_Frozen):
    repo: str
    size_mb: int = Field(ge=1)


class OllamaTag(_Frozen):
    tag: str
    size_mb: int = Field(ge=1)


class StarterSpec(_Frozen):
    """One entry of resources/models/starters.toml."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    title: str
    parameters: str
    note: str = ""
    license: str | None = None
    shape: StarterShape
    gguf: GgufFile | None = None
    mlx: MlxRepo | None = None
    ollama: OllamaTag | None = None


class EngineCostSpec(_Frozen):
    download_mb: int = Field(ge=0)
    disk_mb: int = Field(ge=0)
    minutes: float = Field(ge=0)
    note: str = ""


class StarterCatalog(_Frozen):
    schema_: int = Field(default=1, alias="schema")
    starter: list[StarterSpec] = Field(min_length=1)
    engine: dict[str, EngineCostSpec] = {}


class OptionKind(StrEnum):
    STARTER = "starter"  # from the guide's catalog
    LIBRARY = "library"  # a model already on this machine


class SizedFrom(StrEnum):
    HUB = "hub"  # the Hub's files and the GGUF header (or config.json)
    CATALOG = "catalog"  # the catalog's approximate numbers (offline)
    DISK = "disk"  # the files on this machine


class StarterOption(_Frozen):
    """A model the guide offers for the chosen engine, with its fit on this machine."""

    id: str = Field(description="the starter's id, or 'library:' and the library id")
    kind: OptionKind
    title: str
    engine: EngineId
    parameters: str | None = None
    note: str = ""
    repo: str | None = Field(default=None, description="the Hub repository to download from")
    files: list[str] = Field(default=[], description="files to download; empty: the whole repo")
    ollama_tag: str | None = None
    size_bytes: int = Field(default=0, ge=0)
    sized_from: SizedFrom
    verdict: FitVerdict | None = Field(default=None, description="None when not estimated")
    fit: str = Field(default="", description="the estimate's summary, in words")
    comfortable: bool = Field(default=False, description="fits with room: runs at a good pace")
    downloaded: bool = False
    library_id: str | None = None
    model: str | None = Field(
        default=None,
        description="what the engine loads once downloaded: a GGUF file, a model folder, "
        "or an Ollama tag",
    )
    download: SetupCost | None = Field(default=None, description="None once downloaded")
    problem: str | None = Field(default=None, description="why it cannot be used now")


class StarterList(_Frozen):
    """`GET /api/v1/starters`: the options for one engine, the recommended one and why."""

    engine: EngineId
    online: bool = Field(description="False: the Hub did not answer; only local models work")
    offline_reason: str | None = None
    options: list[StarterOption] = Field(description="starters smallest first, then the library")
    recommended: str | None = Field(default=None, description="the id of the option to take")
    reason: str = Field(description="why that one, in words (or why there is none)")


class ServeStarterRequest(_Frozen):
    """`POST /api/v1/starters/serve`: serve a downloaded model for the first chat."""

    engine: EngineId
    model: str = Field(min_length=1, description="a GGUF file, a model folder or an Ollama tag")
    ctx_size: int | None = Field(
        default=None, ge=64, le=1048576, description="None: 4096, or less if the model's is less"
    )


class ServedStarter(_Frozen):
    instance: InstanceInfo
    model: str = Field(description="the name to send chat requests to the gateway with")
