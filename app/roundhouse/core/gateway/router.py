"""Which running instance serves a requested model name, and what the gateway lists."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath, PurePosixPath, PureWindowsPath

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo, InstanceOrigin, InstanceStatus
from roundhouse.core.gateway.errors import ModelNotFound, ModelNotReady
from roundhouse.core.gateway.remote import is_peer, peer_name, peer_prefix

__all__ = [
    "COMING",
    "ModelNotFound",
    "ModelNotReady",
    "Route",
    "by_preference",
    "held_back",
    "known_as",
    "listed",
    "names_of",
    "route",
    "serving",
    "short_name",
]

# Engines Roundhouse started answer first: their lifetime and output are ours to manage.
_ORIGIN_RANK = {
    InstanceOrigin.STARTED: 0,
    InstanceOrigin.ADOPTED: 1,
    InstanceOrigin.EXTERNAL: 2,
    InstanceOrigin.PEER: 3,
}
# Statuses from which an instance will (soon) serve again: the model is busy, not unknown.
COMING = frozenset(
    {
        InstanceStatus.STARTING,
        InstanceStatus.LOADING,
        InstanceStatus.RESTARTING,
        InstanceStatus.UNHEALTHY,
    }
)


@dataclass(frozen=True)
class Route:
    instance: InstanceInfo
    # The name the engine knows the model by: what goes in the forwarded `model` field.
    upstream_model: str
    # The name the gateway served, after an alias or the default model replaced the
    # client's (the reply's x-roundhouse-model), and which of them did ("" for neither).
    model: str = ""
    via: str = ""


def by_preference(instances: list[InstanceInfo]) -> list[InstanceInfo]:
    return sorted(instances, key=lambda i: (_ORIGIN_RANK.get(i.origin, 3), i.started_at))


def names_of(info: InstanceInfo) -> set[str]:
    """Every name a client may use for what this instance serves."""
    names = set(info.models)
    if is_peer(info):
        # The ids its machine's gateway lists, and each as `machine/id`, which only it takes.
        return names | {peer_name(info, m) for m in info.models}
    if info.engine == EngineId.OLLAMA:
        # Ollama serves many models, by tag: `llama3` is `llama3:latest`.
        names |= {m.removesuffix(":latest") for m in info.models if m.endswith(":latest")}
        return names
    return names | known_as(info.model, info.options.served_name if info.options else None)


def known_as(*names: str | None) -> set[str]:
    """The names themselves, and a GGUF path's file name with and without `.gguf`."""
    out: set[str] = set()
    for name in names:
        if name:
            base = PurePath(name).name
            out |= {name, base, base.removesuffix(".gguf")}
    return out


def _upstream_name(info: InstanceInfo, requested: str) -> str:
    if is_peer(info):
        # Its machine's gateway knows the model by its own id, not by `machine/id`.
        return requested.removeprefix(f"{peer_prefix(info)}/")
    if requested in info.models or not info.models:
        return requested
    if info.engine == EngineId.OLLAMA and f"{requested}:latest" in info.models:
        return requested
    # An alias (a path, a file name): send the id the engine itself lists, since some
    # engines (mlx_lm.server) would try to load whatever name they are sent.
    return info.models[0]


def _no_preset(_: str) -> bool:
    return False


def serving(
    instances: list[InstanceInfo], model: str, is_preset: Callable[[str], bool] = _no_preset
) -> list[InstanceInfo]:
    """The instances a request for `model` may go to, the preferred first. A model that a
    saved preset starts (`is_preset`) never goes to an engine Roundhouse did not start unless
    the user allowed that one: another program must not take a name the user set up to run
    here. `is_preset` is asked only when such an engine lists the name."""
    named = [i for i in by_preference(instances) if model in names_of(i)]
    if any(not i.may_serve_presets for i in named) and is_preset(model):
        return [i for i in named if i.may_serve_presets]
    return named


def held_back(instances: list[InstanceInfo], model: str) -> str:
    """Words for an engine Roundhouse did not start that lists `model` but may not serve it
    because a preset starts it: which one, and how to allow it. Empty when there is none."""
    held = [i for i in by_preference(instances) if not i.may_serve_presets]
    info = next((i for i in held if model in names_of(i)), None)
    if info is None:
        return ""
    return (
        f" The {info.engine.value} instance {info.id} at {info.url}, which Roundhouse did not "
        f"start, lists '{model}' too; a preset of yours starts that model, so the gateway sends "
        f"it there only once you allow it: `roundhouse engines allow-presets {info.id}`, or "
        "that row's menu on the Engines page."
    )


def route(
    instances: list[InstanceInfo], model: str, is_preset: Callable[[str], bool] = _no_preset
) -> Route:
    """The ready instance that serves `model`, started ones before found ones; see `serving`
    for `is_preset`."""
    serving_it = serving(instances, model, is_preset)
    ready = [i for i in serving_it if i.status == InstanceStatus.READY]
    if ready:
        return Route(ready[0], _upstream_name(ready[0], model))
    coming = [i for i in serving_it if i.status in COMING]
    if coming:
        info = coming[0]
        raise ModelNotReady(
            f"The model '{model}' is served by {info.engine.value} instance {info.id}, which "
            f"is {info.status.value} and not answering yet. Retry in a moment."
        )
    available = sorted(listed(instances))
    offer = ", ".join(f"'{m}'" for m in available) if available else "none (start an instance)"
    raise ModelNotFound(
        f"The model '{model}' is not served by any running instance. Models available: {offer}."
        + (held_back(instances, model) if is_preset(model) else "")
    )


def listed(instances: list[InstanceInfo]) -> dict[str, InstanceInfo]:
    """Each model id that ready instances serve, with the instance a request for it goes to."""
    out: dict[str, InstanceInfo] = {}
    for info in by_preference(instances):
        if info.status != InstanceStatus.READY:
            continue
        for model in info.models or ([info.model] if info.model else []):
            # A path is offered by the name a client would type: the file's stem.
            out.setdefault(short_name(model) if info.engine != EngineId.OLLAMA else model, info)
    return out


def short_name(name: str) -> str:
    """A model named by a file path, as a client would type it: the file's stem (a GGUF's
    without `.gguf`), the folder's name; any other name as it is."""
    path: PurePath
    if PurePosixPath(name).is_absolute() or name.startswith("~"):
        path = PurePosixPath(name)
    elif PureWindowsPath(name).is_absolute():
        path = PureWindowsPath(name)
    else:
        return name
    base = path.name
    return base[: -len(".gguf")] if base.lower().endswith(".gguf") else base
