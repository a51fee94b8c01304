"""What the gateway can start on request: every model with a saved preset, and every model
of the library, each by a short name.

A `StartableSource` is any function returning what can be started, by name. Presets come
first (the user's own settings win); the library's models follow with settings the fit
estimate chooses at the start (`launch.py`). The library is read from its last scan, never
scanned per request: its entries are rebuilt only when the library scanned again."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Protocol

from roundhouse.api.engines import EngineId, InstanceOptions, ModelFormat
from roundhouse.api.instances import Preset, StartRequest
from roundhouse.api.library import LibraryList, LibraryModel, LibrarySource
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.gateway.launch import FitFor, Launch, plan_launch
from roundhouse.core.gateway.router import known_as, short_name
from roundhouse.core.instances.presets import PresetStore

log = logging.getLogger(__name__)

# Among several presets for one model, this one is what a start uses.
DEFAULT_PRESET = "default"
# What a library model's listing says before its first start has chosen its settings.
CHOSEN_AT_START = "Settings chosen for this machine by the fit estimate at the first request."


@dataclass(frozen=True)
class Startable:
    """A model Roundhouse can start, with the engine and preset a start would use (None:
    a library model, started with settings the fit estimate chooses)."""

    id: str
    engine: EngineId
    model: str
    preset: str | None
    names: frozenset[str]
    # Words for the listing: the preset's name, or how the settings will be chosen.
    note: str = ""
    # A library model's start, planned when it starts (the machine's memory then).
    plan: Callable[[], Awaitable[Launch]] | None = field(default=None, compare=False)

    @property
    def key(self) -> tuple[EngineId, str]:
        return (self.engine, self.model)

    async def launch(self) -> Launch:
        """The start request, and what it chose in words."""
        if self.plan is not None:
            return await self.plan()
        request = StartRequest(
            engine=self.engine, preset=self.preset, options=InstanceOptions(model=self.model)
        )
        return Launch(request, f"The saved preset '{self.preset}'.")


StartableSource = Callable[[], list[Startable]]


def listed_id(engine: EngineId, model: str, served_name: str | None) -> str:
    """The name a model is listed under: its served name, a GGUF's file stem, a folder's
    name, else itself (a repository id, an Ollama tag); never a path."""
    if served_name:
        return served_name
    if engine != EngineId.OLLAMA and model.lower().endswith(".gguf"):
        return PurePath(model).name[: -len(".gguf")]
    return short_name(model)


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
                note=f"The saved preset '{preset.name}'.",
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


class ModelLibrary(Protocol):
    """The library as the gateway reads it (`LibraryService`): its last scan, how many
    scans have finished, and a scan on demand."""

    @property
    def last(self) -> LibraryList | None: ...

    @property
    def generation(self) -> int: ...

    async def scan(self) -> LibraryList: ...


def engine_for(model: LibraryModel) -> EngineId | None:
    """The engine a library model starts on when no preset says: its first one."""
    if model.source == LibrarySource.OLLAMA:
        return EngineId.OLLAMA
    if model.error or not model.engines:
        return None
    if model.format == ModelFormat.GGUF and EngineId.LLAMA_CPP in model.engines:
        return EngineId.LLAMA_CPP
    return model.engines[0]


class LibraryStartables:
    """The library's models as startables. Cheap per call: the entries are rebuilt only when
    the library finished another scan (its `generation`); `refresh` asks for one."""

    def __init__(
        self,
        library: Callable[[], ModelLibrary | None],
        fit: Callable[[], FitFor | None],
        opened: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._library = library
        self._fit = fit
        # Waited for before a refresh: the library opens beside the daemon's start.
        self._opened = opened
        self._generation = -1
        self._entries: list[Startable] = []

    def __call__(self) -> list[Startable]:
        library = self._library()
        if library is None or library.last is None:
            return []
        if library.generation != self._generation:
            self._entries = self._build(library.last.models)
            self._generation = library.generation
        return self._entries

    async def refresh(self) -> bool:
        """Scan the library again (models downloaded or deleted since); False without one."""
        if self._opened is not None:
            await self._opened()
        library = self._library()
        if library is None:
            return False
        await library.scan()
        return True

    def _build(self, models: list[LibraryModel]) -> list[Startable]:
        out = []
        for model in models:
            engine = engine_for(model)
            if engine is None or not model.served_id:
                continue
            target = model.name if engine == EngineId.OLLAMA else (model.path or model.name)
            names = set(names_for(engine, target, model.served_id)) | {model.id}
            out.append(
                Startable(
                    id=model.served_id,
                    engine=engine,
                    model=target,
                    preset=None,
                    names=frozenset(names),
                    note=CHOSEN_AT_START,
                    plan=self._planner(model, engine, model.served_id),
                )
            )
        return out

    def _planner(
        self, model: LibraryModel, engine: EngineId, served_id: str
    ) -> Callable[[], Awaitable[Launch]]:
        async def plan() -> Launch:
            return await plan_launch(self._fit(), model, engine, served_id)

        return plan


def combined(presets: StartableSource, library: StartableSource) -> StartableSource:
    """Presets first; then each library model no preset starts. A library model whose name a
    preset lists already keeps its names but takes a longer id."""

    def startable() -> list[Startable]:
        chosen = presets()
        models = {s.model for s in chosen}
        ids = {s.id.casefold() for s in chosen}
        for entry in library():
            if entry.model in models:
                continue  # the user's preset for it wins
            if entry.id.casefold() in ids:
                entry = replace(entry, id=f"{entry.id}-{entry.engine.value}")
            chosen.append(entry)
        return chosen

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
