"""What the gateway lists: models ready instances serve, those loading, those it can start."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from roundhouse.api.engines import EngineId
from roundhouse.api.gateway import GatewayModel, ModelState
from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.core.gateway.library import Startable, listed_id
from roundhouse.core.gateway.remote import is_peer, peer_name
from roundhouse.core.gateway.router import COMING, by_preference, names_of, short_name


@dataclass(frozen=True)
class Listed:
    model: GatewayModel
    # The instance behind it; None for a model nothing runs yet.
    instance: InstanceInfo | None = None


def _own_ids(info: InstanceInfo) -> list[str]:
    if info.models:
        if info.engine == EngineId.OLLAMA:
            return list(info.models)
        # llama-server lists a model started on a file by its path: offered by its stem.
        return [short_name(m) for m in info.models]
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
    # Names a preset starts: an engine we did not start may not take them. A library
    # model's names reserve nothing: the Ollama running here serves its own store.
    reserved = {name for s in startables if s.preset for name in (s.id, *s.names)}
    # Names this machine can start stay its own: a paired machine's instance of one is
    # listed as `machine/name`.
    startable_here = {name for s in startables for name in (s.id, *s.names)}
    for info in by_preference(instances):
        if info.status == InstanceStatus.READY:
            state = ModelState.SERVING
        elif info.status in COMING:
            state = ModelState.LOADING
        else:
            continue
        library: Startable | None = None
        if is_peer(info):
            # Its machine's gateway named them; a name taken here already (this machine's,
            # or another machine's) is listed as `machine/name`.
            here = out.keys() | startable_here
            ids = [peer_name(info, m) if m in here else m for m in info.models]
        elif info.may_serve_presets:
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
                launch=info.launch_note or (library.note if library else None),
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
            launch=startable.note,
        )
        out[startable.id] = Listed(entry)
    return list(out.values())


def with_aliases(listed: list[Listed], aliases: Mapping[str, str]) -> list[Listed]:
    """The listing, then each alias as a model of its own, served as its target is. An
    alias whose target nothing lists or starts is left out (`roundhouse gateway alias ls`
    shows it). An alias saved before a model of its name appeared takes that name's
    requests (aliases resolve first), so it is listed in that model's place: the listing
    says where a request goes."""
    by_id = {entry.model.id: entry for entry in listed}
    out = [entry for entry in listed if entry.model.id not in aliases]
    for alias, target in aliases.items():
        found = by_id.get(target) or next(
            (e for e in listed if e.instance and target in names_of(e.instance)), None
        )
        if found is not None:
            model = found.model.model_copy(update={"id": alias, "alias_of": found.model.id})
            out.append(Listed(model, found.instance))
    return out
