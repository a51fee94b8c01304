"""What installs report: releases, the chosen build, progress events, installed versions."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from roundhouse.api.engines import EngineId
from roundhouse.api.jobs import JobState as JobState  # one for every job; installs never queue


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Backend(StrEnum):
    """The GPU API a llama.cpp build uses (every build also runs on the CPU)."""

    CPU = "cpu"
    METAL = "metal"
    CUDA = "cuda"
    VULKAN = "vulkan"
    ROCM = "rocm"
    # Built, but never chosen on its own: SYCL, OpenVINO, OpenCL, old CPU variants...
    OTHER = "other"


class ReleaseAsset(_Frozen):
    name: str
    size: int = Field(ge=0)
    url: str = Field(description="browser_download_url")
    digest: str | None = Field(default=None, description='"sha256:<hex>", when GitHub has one')


class Release(_Frozen):
    tag: str
    name: str | None = None
    published_at: str | None = None
    html_url: str | None = None
    assets: list[ReleaseAsset]


class AssetChoice(_Frozen):
    """The build chosen for this machine, the files it needs, and why, in words."""

    asset: ReleaseAsset
    # Windows CUDA builds need the matching cudart-* runtime beside them.
    extras: list[ReleaseAsset] = []
    backend: Backend
    backend_version: str | None = None
    reason: str

    @property
    def total_bytes(self) -> int:
        return self.asset.size + sum(a.size for a in self.extras)


class InstallPlan(_Frozen):
    """What install_llamacpp will do: show it, then pass it back to run it."""

    release: Release
    choice: AssetChoice

    @property
    def tag(self) -> str:
        return self.release.tag


class InstallStage(StrEnum):
    RESOLVING = "resolving"
    DOWNLOADING = "downloading"
    VERIFYING = "verifying"
    EXTRACTING = "extracting"
    INSTALLING = "installing"
    CREATING_VENV = "creating-venv"
    PIP = "pip"
    DONE = "done"


class InstallProgress(_Frozen):
    """One progress event; byte counts while downloading, `line` while pip talks."""

    engine: EngineId
    stage: InstallStage
    message: str
    file: str | None = None
    done_bytes: int | None = None
    total_bytes: int | None = None
    rate_bps: float | None = Field(default=None, description="bytes per second, recent")
    line: str | None = Field(default=None, description="one line of pip's output")


# Called on the event loop's thread: it must return quickly (queue the event, never block).
ProgressCallback = Callable[[InstallProgress], None]


class InstalledBuild(_Frozen):
    """One llama.cpp build in Roundhouse's engines folder."""

    tag: str
    path: str = Field(description="the build's folder")
    executable: str = Field(description="llama-server inside it")
    current: bool = False
    asset: str | None = None
    backend: Backend | None = None
    backend_version: str | None = None
    reason: str | None = None
    installed_at: float | None = Field(default=None, description="seconds since the Unix epoch")


class HashCheck(StrEnum):
    """What pip checked against the sha256 hashes a Roundhouse release pins (ADR 23)."""

    # Every file pip downloaded, the engine's dependencies included.
    ALL = "all"
    # The engine's own files only: its dependencies are not pinned on this platform.
    TOP_LEVEL = "top-level"
    # Nothing: a version other than the pinned one, which the user asked for.
    NONE = "none"


class ManagedVenv(_Frozen):
    """A Python engine installed in its own virtual environment."""

    engine: EngineId
    venv_dir: str
    python: str
    package: str
    version: str | None = None
    hash_check: HashCheck | None = Field(
        default=None, description="what was checked against pinned hashes; None: not known"
    )


class InstallRequest(_Frozen):
    """`POST /api/v1/engines/{engine}/install`: what to install; the daemon plans the rest."""

    tag: str | None = Field(default=None, description="llama.cpp: a release tag; None: latest")
    backend: Backend | None = Field(default=None, description="llama.cpp: override the GPU API")
    python: str | None = Field(
        default=None, description="mlx/vllm/sglang: the Python the venv is made from"
    )
    version: str | None = Field(
        default=None,
        description="mlx/vllm/sglang: the engine's version; None: the one this release pins",
        max_length=64,
    )
    unverified: bool = Field(
        default=False,
        description=(
            "mlx/vllm/sglang: allow a version other than the pinned one (none: the newest), "
            "installed without hash checks; llama.cpp: allow an asset without a sha256 digest"
        ),
    )


class InstallJob(_Frozen):
    id: str
    engine: EngineId
    state: JobState
    started_at: float
    ended_at: float | None = None
    progress: InstallProgress | None = Field(default=None, description="the latest event")
    lines: list[str] = Field(default=[], description="pip's latest output lines")
    line_count: int = Field(default=0, description="lines of output so far, kept or not")
    plan: str | None = Field(default=None, description="the build chosen, and why")
    error: str | None = None
    build: InstalledBuild | None = None
    venv: ManagedVenv | None = None


class InstallJobList(_Frozen):
    jobs: list[InstallJob]


class BuildList(_Frozen):
    """The llama.cpp builds Roundhouse installed; `current` is the one engines start with."""

    current: str | None
    builds: list[InstalledBuild]
    partials: list[str] = Field(default=[], description="downloads that can resume")
