"""Schemas of engine instances: start requests, their state, logs, and presets per model."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.external import AttachSource
from roundhouse.api.instance_memory import InstanceMemory


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class InstanceOrigin(StrEnum):
    # Started by this daemon: output captured, exit observed, restarted when transient.
    STARTED = "started"
    # Started by an earlier daemon that ended without stopping it; found alive and kept.
    ADOPTED = "adopted"
    # Found running on this machine, not started by Roundhouse: stopping it asks first.
    EXTERNAL = "external"
    # Runs on a paired machine (a peer daemon); requests go through that daemon's gateway.
    PEER = "peer"


class InstanceStatus(StrEnum):
    STARTING = "starting"
    # The engine answers "alive, still loading the model".
    LOADING = "loading"
    READY = "ready"
    # An adopted or external engine that does not answer its probe as ready.
    UNHEALTHY = "unhealthy"
    # It ended on its own with a transient failure; a restart is scheduled.
    RESTARTING = "restarting"
    STOPPING = "stopping"
    # It failed to start, or ended and will not be restarted: see `last_exit` / `error`.
    FAILED = "failed"


ACTIVE_STATUSES = frozenset({InstanceStatus.STARTING, InstanceStatus.LOADING, InstanceStatus.READY})


class StartRequest(_Frozen):
    """`POST /api/v1/instances`: start `engine` with `options` (or a saved preset's)."""

    engine: EngineId
    options: InstanceOptions = InstanceOptions()
    preset: str | None = Field(
        default=None, description="name of a preset saved for this engine and model"
    )
    host: str = "127.0.0.1"
    port: int | None = Field(default=None, ge=1, le=65535, description="None: a free port")
    launch_note: str | None = Field(
        default=None,
        max_length=2000,
        description="what chose these settings and why, in words (the gateway's starts)",
    )


class ExitInfo(_Frozen):
    """How an instance ended, in words, with the engine's last log lines."""

    kind: str
    message: str
    returncode: int | None = None
    signal_name: str | None = None
    transient: bool = False
    by_us: bool = False
    log_tail: list[str] = []


class InstanceInfo(_Frozen):
    id: str
    engine: EngineId
    model: str | None
    origin: InstanceOrigin
    status: InstanceStatus
    host: str
    port: int
    url: str = Field(description="the engine's own root URL")
    base_url: str = Field(description="the engine's OpenAI-compatible base, ending in /v1")
    pid: int | None = None
    started_at: float = Field(description="seconds since the Unix epoch")
    ready_at: float | None = None
    # While starting: seconds waited and the probe's last answer in words.
    waited_s: float | None = None
    probe_status: str | None = None
    rss_bytes: int | None = Field(default=None, description="memory of the process tree")
    restarts: int = 0
    last_exit: ExitInfo | None = None
    error: str | None = Field(default=None, description="why it failed, when it did")
    models: list[str] = Field(default=[], description="model ids the engine serves")
    options: InstanceOptions | None = Field(
        default=None, description="what it was started with (None for adopted/external)"
    )
    argv: list[str] = []
    log_path: str | None = None
    found_by: AttachSource | None = Field(default=None, description="how an external was found")
    name: str | None = Field(default=None, description="the name given to an added endpoint")
    needs_api_key: bool = False
    memory: InstanceMemory | None = Field(
        default=None,
        description="after a load: the engine's own buffers per device beside the estimate",
    )
    may_serve_presets: bool = Field(
        default=True,
        description="whether the gateway may send it a request for a model a saved preset "
        "starts; false for an engine Roundhouse did not start until the user allows it",
    )
    unprotected: str | None = Field(
        default=None,
        description="for an engine Roundhouse did not start: why Roundhouse cannot guard it "
        "and what to do, in words; None for the engines Roundhouse runs",
    )
    warnings: list[str] = Field(
        default=[], description="what the user should know about it, in words"
    )
    launch_note: str | None = Field(
        default=None, description="what chose its settings and why, when the gateway started it"
    )
    vision: bool | None = Field(
        default=None,
        description="whether it reads images (llama-server: a vision projector loaded, as its "
        "/props says); None: the engine does not say",
    )
    machine: str | None = Field(
        default=None,
        description="for an instance on a paired machine: that peer's id; None on this machine",
    )


class InstanceList(_Frozen):
    instances: list[InstanceInfo]
    left_out: list[str] = Field(
        default=[],
        description="after a scan: engines found running that Roundhouse does not use, and "
        "why (another user's, listening beyond loopback), in words",
    )


class PresetRouting(_Frozen):
    """`PUT /api/v1/instances/{id}/may-serve-presets`: whether an engine Roundhouse did not
    start may serve the models that saved presets start."""

    allowed: bool


class InstanceLogs(_Frozen):
    """Lines of an instance's output after `since`; pass `next` as `since` to follow."""

    id: str
    lines: list[str]
    next: int = Field(description="sequence number of the last line returned")
    # Lines were dropped between `since` and the first line (the ring moved on).
    truncated: bool = False
    # Which process of the instance wrote them: it grows at each (re)start, and line
    # numbers start again from 0 with it. A follower seeing it change reads from 0.
    generation: int = 0
    path: str | None = None


class LogCount(_Frozen):
    """How many lines an instance's running process wrote: the `next` that
    `GET /api/v1/instances/{id}/logs` would answer at the end of its output."""

    id: str
    generation: int = Field(ge=0, description="which process of the instance (see InstanceLogs)")
    lines: int = Field(ge=0)


class LogCounts(_Frozen):
    """The line counts of every instance whose output the daemon holds (the change feed's
    `logs` kind): counts only, never the lines."""

    instances: list[LogCount]


class Preset(_Frozen):
    """Named options saved for one model on one engine."""

    engine: EngineId
    model: str
    name: str = Field(default="default", min_length=1, max_length=80)
    options: InstanceOptions


class PresetList(_Frozen):
    presets: list[Preset]


class AddEndpointRequest(_Frozen):
    """`POST /api/v1/endpoints`: attach to an OpenAI-compatible server Roundhouse does not run."""

    url: str = Field(min_length=1, description="its base URL, e.g. http://127.0.0.1:1234")
    api_key: str | None = Field(default=None, description="kept in the OS keyring")
    name: str | None = None
    may_serve_presets: bool = Field(
        default=False,
        description="let the gateway send it requests for models that saved presets start",
    )


class InstanceMetrics(_Frozen):
    """An engine's own Prometheus metrics, the ones the catalog names, summed over labels."""

    id: str
    url: str
    values: dict[str, float]
    fetched_at: float
