"""Find each engine on this machine: PATH, the usual install places, a chosen Python."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath, PurePosixPath, PureWindowsPath

from roundhouse.api.engines import (
    DetectedEngine,
    EngineCatalog,
    EngineDetection,
    EngineId,
    EngineSpec,
    FoundBy,
    LaunchStyle,
    MissingEngine,
)
from roundhouse.core.engines.catalog import load_catalog, platform_for, platforms_in_words
from roundhouse.core.engines.host import EngineHost
from roundhouse.core.engines.install.hints import install_hint
from roundhouse.core.engines.install.layout import CURRENT_FILE, VENVS_DIR, venv_python
from roundhouse.core.engines.rpc import rpc_server_beside
from roundhouse.core.engines.versions import (
    ParsedVersion,
    parse_dotted,
    parse_llama_server,
    parse_ollama,
    version_key,
)

# Reads the package's metadata without importing it: importing vllm would load torch.
PACKAGE_PROBE = """\
import importlib.metadata as m, importlib.util as u, json, sys
dist, mod = sys.argv[1], sys.argv[2]
try:
    d = m.distribution(dist)
except m.PackageNotFoundError:
    print(json.dumps({"installed": False}))
    raise SystemExit(0)
files = {str(f).replace("\\\\", "/") for f in (d.files or [])}
rel = mod.replace(".", "/")
if files:
    has = rel + ".py" in files or rel + "/__init__.py" in files
else:
    has = u.find_spec(mod.split(".")[0]) is not None
print(json.dumps({"installed": True, "version": d.version, "module": has}))
"""

_VERSION_PARSERS: dict[EngineId, Callable[[str], ParsedVersion]] = {
    EngineId.LLAMA_CPP: parse_llama_server,
    EngineId.OLLAMA: parse_ollama,
    EngineId.VLLM: parse_dotted,
}
_PLACEHOLDER = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)%")


@dataclass(frozen=True)
class _Candidate:
    path: str
    found_by: FoundBy
    where: str


def detect_engines(
    host: EngineHost,
    catalog: EngineCatalog | None = None,
    *,
    pythons: Sequence[str] = (),
    managed_dir: str | None = None,
) -> EngineDetection:
    """Every runnable engine found here; for each one not found, why. Never raises."""
    catalog = catalog or load_catalog()
    found: list[DetectedEngine] = []
    missing: list[MissingEngine] = []
    for spec in catalog.engines:
        if spec.launch == LaunchStyle.ATTACH:
            continue
        hits, miss = detect_engine(host, spec, pythons=pythons, managed_dir=managed_dir)
        found.extend(hits)
        if miss is not None:
            missing.append(miss)
    return EngineDetection(found=found, missing=missing)


def detect_engine(
    host: EngineHost,
    spec: EngineSpec,
    *,
    pythons: Sequence[str] = (),
    managed_dir: str | None = None,
) -> tuple[list[DetectedEngine], MissingEngine | None]:
    """Every copy of one engine, best first (Roundhouse's own, PATH, install places, Pythons)."""
    place = platform_for(spec, host.system, host.machine)
    if place is None:
        why = f"{spec.title} does not run on {host.system} {host.machine}; it runs on "
        return [], MissingEngine(id=spec.id, why=why + platforms_in_words(spec) + ".")
    support_notes = [place.note] if place.note else []
    candidates, looked_in = _candidates(host, spec, managed_dir)
    found = [_inspect(host, spec, c) for c in candidates]
    reasons: list[str] = []
    # Roundhouse's own environment for this engine comes first, as its own builds do.
    managed_python = _managed_python(host, spec, managed_dir)
    pythons = [managed_python, *pythons] if managed_python else list(pythons)
    for python in dict.fromkeys(pythons) if spec.python_modules else ():
        looked_in.append(f"Python {python}")
        hit, reason = _in_python(host, spec, python)
        if hit is not None and python == managed_python:
            hit = hit.model_copy(
                update={"found_by": FoundBy.MANAGED, "where": "Roundhouse's engines folder"}
            )
        if hit is not None:
            found.append(hit)
        else:
            reasons.append(reason)
    found = [
        hit.model_copy(update={"support": place.support, "notes": [*hit.notes, *support_notes]})
        for hit in found
    ]
    if found:
        return found, None
    return [], MissingEngine(
        id=spec.id,
        why=_why_missing(spec, pythons, reasons),
        looked_in=looked_in,
        install_hint=install_hint(spec, host.system),
    )


def _candidates(
    host: EngineHost, spec: EngineSpec, managed_dir: str | None
) -> tuple[list[_Candidate], list[str]]:
    windows = host.system == "Windows"
    names = [f"{n}.exe" if windows else n for n in spec.executables]
    out: list[_Candidate] = []
    looked_in: list[str] = []
    if managed_dir and spec.managed_subdir:
        base = _join(host, managed_dir, spec.managed_subdir)
        looked_in.append(str(base))
        # Dot-names are unfinished installs and removals in progress, never builds.
        listed = [v for v in host.list_dir(str(base)) or [] if not v.startswith(".")]
        versions = sorted(listed, key=version_key, reverse=True)
        current = (host.first_line(str(base / CURRENT_FILE)) or "").strip() or None
        if current in versions:
            versions = [current, *(v for v in versions if v != current)]
        for version in versions:
            for name in names:
                for path in (base / version / name, base / version / "bin" / name):
                    if host.is_file(str(path)):
                        label = f"{version}, current" if version == current else version
                        where = f"Roundhouse's engines folder ({label})"
                        out.append(_Candidate(str(path), FoundBy.MANAGED, where))
    for name in spec.executables:
        looked_in.append(f"PATH ({name})")
        on_path = host.which(name)
        if on_path:
            out.append(_Candidate(on_path, FoundBy.PATH, "on PATH"))
    for item in spec.install_places:
        if item.os != host.system:
            continue
        usual = _expand(host, item.path)
        if usual is None:
            continue
        looked_in.append(f"{item.label} ({usual})")
        if host.is_file(usual):
            out.append(_Candidate(usual, FoundBy.INSTALL_PLACE, item.label))
    unique = {_same_file_key(host, c.path): c for c in reversed(out)}
    ordered = [c for c in out if unique[_same_file_key(host, c.path)] is c]
    return ordered, looked_in


def _managed_python(host: EngineHost, spec: EngineSpec, managed_dir: str | None) -> str | None:
    if not managed_dir or not spec.python_modules:
        return None
    venv = _join(host, managed_dir, VENVS_DIR, spec.id.value)
    python = str(venv_python(venv, host.system))
    return python if host.is_file(python) else None


def _inspect(host: EngineHost, spec: EngineSpec, cand: _Candidate) -> DetectedEngine:
    parsed = ParsedVersion(None)
    notes: list[str] = []
    if spec.python_package:
        # A console script names its interpreter on its #! line: ask that one.
        python = _shebang_python(host.first_line(cand.path))
        module = spec.python_modules[0] if spec.python_modules else spec.python_package
        probe = _probe_package(host, python, spec.python_package, module) if python else None
        if probe is not None and probe.get("installed"):
            parsed = ParsedVersion(str(probe.get("version")))
    parser = _VERSION_PARSERS.get(spec.id)
    if parsed.version is None and parser is not None:
        output = host.run([cand.path, "--version"])
        if output is None:
            notes.append(
                f"`{_name(cand.path)} --version` did not answer: the file may be broken, "
                "lack a library, or be built for another processor."
            )
        else:
            parsed = parser(output)
    return DetectedEngine(
        id=spec.id,
        found_by=cand.found_by,
        path=cand.path,
        version=parsed.version,
        build_info=parsed.build_info,
        where=cand.where,
        notes=[*parsed.notes, *notes],
        rpc_server=rpc_server_beside(host, cand.path) if spec.id == EngineId.LLAMA_CPP else None,
    )


def _in_python(
    host: EngineHost, spec: EngineSpec, python: str
) -> tuple[DetectedEngine | None, str]:
    if not spec.python_modules or not spec.python_package:
        return None, f"{spec.title} is not a Python package"
    module = spec.python_modules[0]
    probe = _probe_package(host, python, spec.python_package, module)
    if probe is None:
        return None, f"{python} did not run"
    if not probe.get("installed"):
        return None, f"{spec.python_package} is not installed in {python}"
    if not probe.get("module"):
        version = probe.get("version")
        return None, f"{spec.python_package} {version} in {python} lacks the module {module}"
    hit = DetectedEngine(
        id=spec.id,
        found_by=FoundBy.PYTHON,
        python=python,
        module=module,
        version=str(probe.get("version")),
        where=f"in {python}",
    )
    return hit, ""


def _probe_package(
    host: EngineHost, python: str, package: str, module: str
) -> dict[str, object] | None:
    output = host.run([python, "-c", PACKAGE_PROBE, package, module])
    if output is None:
        return None
    # The last line is ours; a sitecustomize may have printed before it.
    lines = output.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def _why_missing(spec: EngineSpec, pythons: Sequence[str], reasons: Iterable[str]) -> str:
    parts: list[str] = []
    if spec.executables:
        names = " or ".join(f"`{n}`" for n in spec.executables)
        parts.append(f"{names} is neither on PATH nor in the usual places")
    if spec.python_modules:
        if pythons:
            parts.extend(reasons)
        else:
            parts.append(f"no Python environment was chosen to look for {spec.python_package} in")
    return f"{spec.title} was not found: " + "; ".join(parts) + "."


def _shebang_python(line: str | None) -> str | None:
    if not line or not line.startswith("#!"):
        return None
    words = line[2:].strip().split()
    if not words:
        return None
    # "#!/usr/bin/env python3" names the interpreter through env.
    if _name(words[0]) == "env" and len(words) > 1:
        return words[1]
    return words[0]


def _expand(host: EngineHost, path: str) -> str | None:
    if path.startswith("~"):
        home = host.env.get("USERPROFILE" if host.system == "Windows" else "HOME")
        if not home:
            return None
        path = home + path[1:]
    missing = [m for m in _PLACEHOLDER.findall(path) if not host.env.get(m)]
    if missing:
        return None
    return _PLACEHOLDER.sub(lambda m: host.env[m.group(1)], path)


def _join(host: EngineHost, *parts: str) -> PurePath:
    if host.system == "Windows":
        return PureWindowsPath(*parts)
    return PurePosixPath(*parts)


def _same_file_key(host: EngineHost, path: str) -> str:
    return path.lower() if host.system in ("Windows", "Darwin") else path


def _name(path: str) -> str:
    return PureWindowsPath(path).name
