"""What the gateway lists: models ready instances serve, those loading, those it can start."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from roundhouse.api.engines import EngineId
from roundhouse.api.gateway import GatewayModel, ModelState
from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.core.gateway.library import Startable, listed_id
from roundhouse.core.gateway.router import COMING, by_preference, names_of


@dataclass(frozen=True)
class Listed:
    model: GatewayModel
    # The instance behind it; None for a model nothing runs yet.
    instance: InstanceInfo | None = None


def _own_ids(info: InstanceInfo) -> list[str]:
    if info.models:
        return list(info.models)
    if not info.model:
        return []
    served = info.options.served_name if info.options else None
    return [listed_id(info.engine, info.model, served)]


def list_models(
    instances: list[InstanceInfo],
    startables: list[Startable],
    loading: Callable[[Startable], bool],
) -> list[Listed]:
    """Each model id once: serving and loading instances first (started before found),
    then the library's models nothing runs. An instance that runs a library model is
    listed under the library's id, so a model keeps its name whether it runs or not. An
    engine Roundhouse did not start, unless the user allowed it, neither claims nor lists a
    name a preset starts: requests for it start the preset's model (see `router.serving`)."""
    out: dict[str, Listed] = {}
    claimed: set[tuple[EngineId, str]] = set()
    reserved = {name for s in startables for name in (s.id, *s.names)}
    for info in by_preference(instances):
        if info.status == InstanceStatus.READY:
            state = ModelState.SERVING
        elif info.status in COMING:
            state = ModelState.LOADING
        else:
            continue
        library: Startable | None = None
        if info.may_serve_presets:
            matches = [s for s in startables if s.names & names_of(info)]
            claimed |= {s.key for s in matches}
            # Ollama serves many models by tag: those are its names already.
            library = matches[0] if matches and info.engine != EngineId.OLLAMA else None
            ids = [library.id] if library else _own_ids(info)
        else:
            ids = [m for m in _own_ids(info) if m not in reserved]
        for model_id in ids:
            entry = GatewayModel(
                id=model_id,
                engine=info.engine,
                state=state,
                instance=info.id,
                preset=library.preset if library else None,
                model=info.model,
            )
            out.setdefault(model_id, Listed(entry, info))
    for startable in startables:
        if startable.key in claimed or startable.id in out:
            continue
        state = ModelState.LOADING if loading(startable) else ModelState.STARTABLE
        entry = GatewayModel(
            id=startable.id,
            engine=startable.engine,
            state=state,
            preset=startable.preset,
            model=startable.model,
        )
        out[startable.id] = Listed(entry)
    return list(out.values())
