"""What the gateway can start on request: for now, every model with a saved preset.

The model library (downloads, scanned folders) will join through the same seam: a
`StartableSource` is any function returning what can be started, by name."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePath

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import Preset, StartRequest
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.gateway.router import known_as
from roundhouse.core.instances.presets import PresetStore

log = logging.getLogger(__name__)

# Among several presets for one model, this one is what a start uses.
DEFAULT_PRESET = "default"


@dataclass(frozen=True)
class Startable:
    """A model Roundhouse can start, with the engine and preset a start would use."""

    id: str
    engine: EngineId
    model: str
    preset: str
    names: frozenset[str]

    @property
    def key(self) -> tuple[EngineId, str]:
        return (self.engine, self.model)

    def request(self) -> StartRequest:
        return StartRequest(
            engine=self.engine, preset=self.preset, options=InstanceOptions(model=self.model)
        )


StartableSource = Callable[[], list[Startable]]


def listed_id(engine: EngineId, model: str, served_name: str | None) -> str:
    """The name a model is listed under: its served name, a GGUF's file stem, else itself."""
    if served_name:
        return served_name
    if engine != EngineId.OLLAMA and model.lower().endswith(".gguf"):
        return PurePath(model).name[: -len(".gguf")]
    return model


def names_for(engine: EngineId, model: str, served_name: str | None) -> frozenset[str]:
    """Every name a request may use for the model, as the router knows a running one."""
    if engine == EngineId.OLLAMA:
        names = {model, model.removesuffix(":latest")}
        return frozenset(names | ({served_name} if served_name else set()))
    return frozenset(known_as(model, served_name))


def from_presets(presets: Iterable[Preset]) -> list[Startable]:
    """One entry per model: its preset named "default" if it has one, else its first."""
    chosen: dict[str, Preset] = {}
    for preset in presets:
        kept = chosen.get(preset.model)
        if kept is None or (preset.name == DEFAULT_PRESET and kept.name != DEFAULT_PRESET):
            chosen[preset.model] = preset
    out = []
    for preset in chosen.values():
        served = preset.options.served_name
        out.append(
            Startable(
                id=listed_id(preset.engine, preset.model, served),
                engine=preset.engine,
                model=preset.model,
                preset=preset.name,
                names=names_for(preset.engine, preset.model, served),
            )
        )
    return out


def preset_library(store: PresetStore) -> StartableSource:
    """What the saved presets can start; a presets file that cannot be read starts nothing
    (the instances API reports that file's problem where presets are edited)."""

    def startable() -> list[Startable]:
        try:
            return from_presets(store.find())
        except RoundhouseError as exc:
            log.warning("The gateway lists no startable models: %s", exc.detail)
            return []

    return startable


def find(startables: list[Startable], name: str) -> Startable | None:
    """The entry listed as `name`, else the first known by it (a path, a file name)."""
    for entry in startables:
        if entry.id == name:
            return entry
    for entry in startables:
        if name in entry.names:
            return entry
    return None
