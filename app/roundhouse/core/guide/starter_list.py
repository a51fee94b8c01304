"""The starter list for one engine: every starter sized and fitted, the library's models, a pick.

Online, each starter is sized from the Hub (its files, and the GGUF header or config.json
read over HTTP Range) by the fit estimator; when the Hub cannot be reached, from the
catalog's numbers, and only models already on this machine are offered. A starter already
in the library is fitted from its own files and needs no download.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from roundhouse.api.engines import EngineId
from roundhouse.api.fit import FitOptions, FitQuery, ModelFit
from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.library import LibraryModel
from roundhouse.api.starters import (
    OptionKind,
    SizedFrom,
    StarterCatalog,
    StarterList,
    StarterOption,
    StarterSpec,
)
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.guide.catalog import StarterSource, catalog_shape, source_for
from roundhouse.core.guide.choice import (
    FIT_ENGINES,
    STARTER_CONTEXT,
    comfort,
    download_cost,
    library_match,
    pick,
    serves,
)
from roundhouse.core.knowledge.fit import estimate_fit
from roundhouse.core.models.hub.errors import HubUnavailableError

Fit = Callable[[FitQuery], Awaitable[ModelFit]]
# Library models listed besides the starters, at most (the smallest first).
MAX_LIBRARY_OPTIONS = 20
LIBRARY_PREFIX = "library:"


@dataclass(frozen=True)
class _Sized:
    size_bytes: int
    fit: ModelFit | None
    sized_from: SizedFrom
    problem: str | None = None
    hub_down: str | None = None  # the Hub did not answer: why


async def starter_list(
    catalog: StarterCatalog,
    engine: EngineId,
    inventory: HardwareInventory,
    library: list[LibraryModel],
    fit: Fit,
    *,
    offline: bool = False,
) -> StarterList:
    """Every starter `engine` can run, then the library's own models for it, with a pick."""
    options_fit = FitOptions(engine=FIT_ENGINES[engine], context_length=STARTER_CONTEXT)
    pairs = [(s, src) for s in catalog.starter if (src := source_for(s, engine)) is not None]
    matches = [library_match(src, library) for _, src in pairs]
    sized = await asyncio.gather(
        *(
            _size(spec, src, match, fit, options_fit, offline)
            for (spec, src), match in zip(pairs, matches, strict=True)
        )
    )
    asked_hub = [s for s, (_, src) in zip(sized, pairs, strict=True) if src.repo is not None]
    down = [s.hub_down for s in asked_hub if s.hub_down]
    online = not offline and not (asked_hub and len(down) == len(asked_hub))
    reason = None if online else (down[0] if down else "Working offline, as asked: no Hub.")
    ram = inventory.memory.total_bytes
    options: list[StarterOption] = []
    for (spec, src), match, size in zip(pairs, matches, sized, strict=True):
        estimate = size.fit
        if estimate is None:
            estimate = _catalog_fit(spec, src, inventory, options_fit)
        fits, words = comfort(estimate.report, ram)
        options.append(
            StarterOption(
                id=spec.id,
                kind=OptionKind.STARTER,
                title=spec.title,
                engine=engine,
                parameters=spec.parameters,
                note=spec.note,
                repo=src.repo,
                files=list(src.files),
                ollama_tag=src.ollama_tag,
                size_bytes=size.size_bytes,
                sized_from=size.sized_from,
                verdict=estimate.report.verdict,
                fit=words,
                comfortable=fits,
                downloaded=match is not None,
                library_id=match.id if match else None,
                model=_loads(match, src) if match else None,
                download=None if match else download_cost(size.size_bytes),
                problem=size.problem,
            )
        )
    taken = {m.id for m in matches if m is not None}
    others = [m for m in library if serves(m, engine) and m.id not in taken]
    others.sort(key=lambda m: m.size_bytes)
    others = others[:MAX_LIBRARY_OPTIONS]
    fitted = await asyncio.gather(*(_library_fit(m, fit, options_fit) for m in others))
    for model, estimate in zip(others, fitted, strict=True):
        fits, words = comfort(estimate.report, ram) if estimate else (False, "")
        options.append(
            StarterOption(
                id=LIBRARY_PREFIX + model.id,
                kind=OptionKind.LIBRARY,
                title=model.name,
                engine=engine,
                parameters=model.parameter_label,
                repo=model.repo,
                size_bytes=model.size_bytes,
                sized_from=SizedFrom.DISK,
                verdict=estimate.report.verdict if estimate else None,
                fit=words or "Not estimated: its engine sizes it itself.",
                comfortable=fits,
                downloaded=True,
                library_id=model.id,
                model=model.name if engine == EngineId.OLLAMA else model.path,
            )
        )
    why_offline = "Working offline, as asked" if offline else "Hugging Face cannot be reached"
    recommended, why = pick(options, online=online, why_offline=why_offline)
    return StarterList(
        engine=engine,
        online=online,
        offline_reason=reason,
        options=options,
        recommended=recommended,
        reason=why,
    )


async def _size(
    spec: StarterSpec,
    src: StarterSource,
    match: LibraryModel | None,
    fit: Fit,
    options: FitOptions,
    offline: bool,
) -> _Sized:
    if match is not None and src.ollama_tag is None:
        try:
            local = await fit(FitQuery(library_id=match.id, options=options))
        except RoundhouseError:
            local = None
        return _Sized(match.size_bytes, local, SizedFrom.DISK)
    if match is not None:
        return _Sized(match.size_bytes, None, SizedFrom.DISK)
    if src.repo is None or offline:
        return _Sized(src.size_bytes, None, SizedFrom.CATALOG)
    try:
        found = await fit(FitQuery(repo=src.repo, group=src.group, options=options))
    except HubUnavailableError as exc:
        return _Sized(src.size_bytes, None, SizedFrom.CATALOG, hub_down=exc.detail)
    except RoundhouseError as exc:
        return _Sized(src.size_bytes, None, SizedFrom.CATALOG, problem=exc.detail)
    return _Sized(found.size_bytes or src.size_bytes, found, SizedFrom.HUB)


def _catalog_fit(
    spec: StarterSpec, src: StarterSource, inventory: HardwareInventory, options: FitOptions
) -> ModelFit:
    report = estimate_fit(catalog_shape(spec, src), inventory, options)
    return ModelFit(target=spec.title, size_bytes=src.size_bytes, report=report)


async def _library_fit(model: LibraryModel, fit: Fit, options: FitOptions) -> ModelFit | None:
    try:
        return await fit(FitQuery(library_id=model.id, options=options))
    except RoundhouseError:
        # An Ollama model, or one whose header cannot be read: listed, not estimated.
        return None


def _loads(model: LibraryModel, src: StarterSource) -> str | None:
    """What the engine is given: the Ollama tag, else the file or folder."""
    return src.ollama_tag if src.ollama_tag is not None else model.path
