"""Schemas of the gateway's control side: what it can serve, its listeners, usage, its key."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from roundhouse.api.engines import EngineId


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelState(StrEnum):
    # A ready instance serves it now.
    SERVING = "serving"
    # An instance for it is starting or loading.
    LOADING = "loading"
    # Nothing serves it; a saved preset lets the gateway start one on the first request.
    STARTABLE = "startable"


class CircuitState(StrEnum):
    # Requests go to it.
    CLOSED = "closed"
    # It failed: it takes no requests until a health check finds it answering.
    OPEN = "open"
    # A health check found it answering: the next request's outcome closes or opens it.
    HALF_OPEN = "half-open"


class GatewayModel(_Frozen):
    id: str = Field(description="the name to put in a request's `model`")
    engine: EngineId
    state: ModelState
    instance: str | None = Field(default=None, description="the instance serving it, if any")
    preset: str | None = Field(default=None, description="the preset a start would use")
    model: str | None = Field(default=None, description="the model path or repo behind the id")
    launch: str | None = Field(
        default=None,
        description="how its settings are (or were) chosen: a preset, or the fit estimate's "
        "choice for this machine and why, in words",
    )
    alias_of: str | None = Field(
        default=None, description="for an alias: the id it stands for (a setting)"
    )


class GatewayModelList(_Frozen):
    models: list[GatewayModel]
    active_model: str | None = None
    default_model: str | None = Field(
        default=None, description="what a name nothing lists is served by (a setting)"
    )
    circuits: dict[str, CircuitState] = Field(
        default_factory=dict,
        description="instances whose circuit is not closed (open or half-open), by id: the "
        "change feed's gateway event says when one opens or closes",
    )


class RouteInstance(_Frozen):
    """One instance a model's requests may go to, as the gateway sees it."""

    instance: str
    engine: EngineId
    machine: str | None = Field(default=None, description="a paired machine; None: this one")
    status: str = Field(description="the instance's own status (ready, loading, ...)")
    circuit: CircuitState = CircuitState.CLOSED
    failures: int = Field(default=0, description="failures in a row since the last success")
    last_error: str | None = Field(default=None, description="why it last failed, in words")
    next_check_in_s: float | None = Field(
        default=None, description="an open circuit: seconds until its next health check"
    )
    busy: int = Field(default=0, description="requests in flight on it and waiting for it")
    context: int | None = Field(
        default=None, description="the context of one request, once the engine said it"
    )


class ModelRoute(_Frozen):
    model: str
    instances: list[RouteInstance] = Field(
        description="in the order a request tries them now: healthy and least busy first"
    )
    fallbacks: list[str] = Field(
        default_factory=list,
        description="models tried in turn when no healthy instance serves it (a setting)",
    )


class GatewayRoutes(_Frozen):
    """`GET /api/v1/gateway/routes`: per model, where requests go and each one's health."""

    routes: list[ModelRoute]


class ServeRequest(_Frozen):
    """`POST /api/v1/gateway/serve`: make sure an instance serves `model`, starting one."""

    model: str = Field(min_length=1)


class InstanceUsage(_Frozen):
    instance: str
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    by_api: dict[str, int] = Field(
        default_factory=dict,
        description="requests per client API and path taken, e.g. 'anthropic/translated'",
    )
    in_flight: int = 0
    queued: int = 0
    last_used_at: float | None = None
    idle_ttl_s: float | None = Field(
        default=None, description="stopped after this long idle; None: kept"
    )


class GatewayUsage(_Frozen):
    """`GET /api/v1/gateway/usage`: each instance's use of the gateway."""

    usage: list[InstanceUsage]


class GatewayListener(_Frozen):
    url: str
    needs_key: bool
    error: str | None = Field(default=None, description="why it is not listening, if it is not")


class GatewayStatus(_Frozen):
    listeners: list[GatewayListener]
    key_set: bool
    key_kept_in: str = Field(
        default="the system keyring",
        description="where the daemon keeps the key: the system keyring, or on a machine "
        "without one the path of a file only its user can read",
    )
    usage: list[InstanceUsage]


class GatewayKey(_Frozen):
    """The key, shown when generated; kept in the OS keyring, or on a machine without one in
    a file only the daemon's user can read."""

    key: str
    kept_in: str = Field(
        default="the system keyring",
        description="where the daemon keeps it (an answer's field; a request leaves it out)",
    )


class GatewayKeyShown(_Frozen):
    """`GET /api/v1/gateway/key`: the key for this machine's own clients (the app's Use
    with… panel, `roundhouse launch`), which hold the control token already; None: no key
    is set, or it could not be read."""

    key: str | None = None
