"""The engine catalog: resources/engines/catalog.toml, loaded, validated and cached."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import ValidationError

from roundhouse.api.engines import (
    EngineCatalog,
    EngineId,
    EngineSpec,
    InstanceOptions,
    LaunchStyle,
    Platform,
)
from roundhouse.base.resources import read_toml, resource_path
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.hardware.host import normalize_arch


class CatalogError(RoundhouseError):
    """The catalog file is broken: the message names the file and the key."""

    title = "Engine catalog is invalid"
    status = 500


def catalog_file() -> Path:
    return resource_path("engines", "catalog.toml")


@cache
def load_catalog(path: Path | None = None) -> EngineCatalog:
    """The catalog at `path` (default: the bundled one); raises CatalogError when malformed."""
    path = path or catalog_file()
    data = read_toml(path, "engine catalog", CatalogError)
    entries = data.get("engine")
    if not isinstance(entries, list) or not entries:
        raise CatalogError(f"The engine catalog {path} has no [[engine]] tables.")
    try:
        catalog = EngineCatalog(engines=entries)
    except ValidationError as exc:
        raise CatalogError(_describe(path, entries, exc)) from exc
    _check(path, catalog)
    return catalog


def _describe(path: Path, entries: list[object], exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = list(first["loc"])
    # loc is ("engines", index, key...): name the entry by its id, as the file does.
    if len(loc) >= 2 and loc[0] == "engines" and isinstance(loc[1], int):
        entry = entries[loc[1]]
        ident = entry.get("id", f"#{loc[1] + 1}") if isinstance(entry, dict) else loc[1]
        where = f"engine {ident!r}" + "".join(f".{k}" for k in loc[2:])
    else:
        where = ".".join(str(k) for k in loc)
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"The engine catalog {path} is invalid at {where}: {first['msg']}{more}."


def _check(path: Path, catalog: EngineCatalog) -> None:
    seen: set[EngineId] = set()
    for spec in catalog.engines:
        if spec.id in seen:
            raise CatalogError(f"The engine catalog {path} lists engine {spec.id!r} twice.")
        seen.add(spec.id)
        runnable = spec.launch != LaunchStyle.ATTACH
        if runnable and not (spec.executables or spec.python_modules):
            raise CatalogError(
                f"The engine catalog {path} is invalid at engine {spec.id.value!r}: "
                "it names neither executables nor python_modules."
            )
        if spec.launch == LaunchStyle.PYTHON_MODULE and not spec.python_package:
            raise CatalogError(
                f"The engine catalog {path} is invalid at engine {spec.id.value!r}: "
                "python_package is needed to read its version."
            )
        unknown = sorted(set(spec.options) - set(InstanceOptions.model_fields) - {"model"})
        if unknown or "model" in spec.options:
            raise CatalogError(
                f"The engine catalog {path} is invalid at engine {spec.id.value!r}: options "
                f"names what is not an instance option: {', '.join(unknown or ['model'])}."
            )
    absent = [e.value for e in EngineId if e not in seen]
    if absent:
        raise CatalogError(f"The engine catalog {path} lacks engines: {', '.join(absent)}.")


def platform_for(spec: EngineSpec, system: str, machine: str) -> Platform | None:
    """The catalog's entry for this OS and architecture, or None where the engine does not run."""
    arch = normalize_arch(machine)
    for entry in spec.platforms:
        if entry.os == system and entry.arch in (arch, "any"):
            return entry
    return None


def platforms_in_words(spec: EngineSpec) -> str:
    names = {"Darwin": "macOS", "Linux": "Linux", "Windows": "Windows"}
    parts = [f"{names[p.os]} {p.arch}" for p in spec.platforms]
    return ", ".join(parts)
