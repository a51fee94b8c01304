"""The engine versions and sha256 hashes a release pins, one pip requirements file per platform.

`<pins>/<engine>/<os>-<arch>.txt` (`mlx/darwin-arm64.txt`, `vllm/linux-x86_64.txt`) is a pip
requirements file written by installers/refresh_engine_pins.py: every line `name==version`
with the `--hash=sha256:` of each of that version's files. Its header says how much it covers:

    # pins: all          every package the engine needs on this platform, dependencies too
    # pins: top-level    only the engine's own packages; `# why:` says why no more

pip is given these files as they are (`-r`), so hash-checking mode applies to each line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from roundhouse.api.engines import EngineId
from roundhouse.api.installs import HashCheck
from roundhouse.base.resources import resource_path
from roundhouse.core.engines.install.errors import InstallError
from roundhouse.core.hardware.host import normalize_arch

# A folder laid out like resources/engines/pins: a mirror's pins, or the tests' own.
PINS_ENV = "ROUNDHOUSE_ENGINE_PINS"
_HEADER = re.compile(r"^#\s*([a-z-]+):\s*(.*?)\s*$")
_REQUIREMENT = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?P<extras>\[[A-Za-z0-9._,\s-]*\])?\s*==\s*"
    r"(?P<version>[A-Za-z0-9][A-Za-z0-9.+!_-]*)\s*(?:;\s*(?P<markers>.+?))?\s*$"
)
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})(?=\s|$)")
_COVERAGE = {"all": HashCheck.ALL, "top-level": HashCheck.TOP_LEVEL}


class PinsError(InstallError):
    """The shipped pins are missing or damaged: the installation of Roundhouse is broken."""

    title = "Engine pins are missing or damaged"


def normalized(name: str) -> str:
    """A distribution name as indexes compare it (PEP 503): `MLX_lm` is `mlx-lm`."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Pin:
    """One line of a pins file: a distribution at one version, and the hashes of its files."""

    name: str
    extras: str
    version: str
    markers: str
    hashes: tuple[str, ...]

    @property
    def key(self) -> str:
        return normalized(self.name)

    def requirement(self) -> str:
        """The line without its hashes, for a pip run that does not check them."""
        markers = f" ; {self.markers}" if self.markers else ""
        return f"{self.name}{self.extras}=={self.version}{markers}"


@dataclass(frozen=True)
class PinFile:
    path: Path
    coverage: HashCheck
    why: str | None
    pins: tuple[Pin, ...]

    def versions_of(self, name: str) -> list[str]:
        """The versions pinned for `name` (more than one where Python versions differ)."""
        key = normalized(name)
        return list(dict.fromkeys(p.version for p in self.pins if p.key == key))


def default_pins_dir() -> Path:
    """$ROUNDHOUSE_ENGINE_PINS, else the pins shipped in resources/engines/pins."""
    configured = os.environ.get(PINS_ENV, "").strip()
    return Path(configured) if configured else resource_path("engines", "pins")


def platform_key(system: str, machine: str) -> str:
    """`linux-x86_64`, `darwin-arm64`, `windows-x86_64`: how pins files are named."""
    return f"{system.lower()}-{normalize_arch(machine)}"


def pins_path(pins_dir: Path, engine: EngineId, system: str, machine: str) -> Path:
    return pins_dir / engine.value / f"{platform_key(system, machine)}.txt"


def read_pins(path: Path) -> PinFile:
    """Parse a pins file; PinsError names the file and the line when it is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PinsError(
            f"Cannot read the engine pins {path}: {exc.strerror or exc}. Reinstall Roundhouse."
        ) from exc
    header: dict[str, str] = {}
    pins: list[Pin] = []
    for number, line in _logical_lines(text):
        if not pins and (found := _HEADER.match(line)):
            header.setdefault(found.group(1), found.group(2))
        content = _without_comment(line)
        if content:
            pins.append(_pin(path, number, content))
    coverage = _COVERAGE.get(header.get("pins", ""))
    if coverage is None:
        raise _damaged(path, 1, "its header has no `# pins: all` or `# pins: top-level` line")
    if not pins:
        raise _damaged(path, 1, "it pins no package")
    return PinFile(path=path, coverage=coverage, why=header.get("why") or None, pins=tuple(pins))


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """pip's reading: a line ending in a backslash goes on in the next."""
    joined: list[tuple[int, str]] = []
    parts: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not parts:
            start = number
        stripped = raw.rstrip()
        if stripped.endswith("\\"):
            parts.append(stripped[:-1])
            continue
        parts.append(stripped)
        joined.append((start, " ".join(p.strip() for p in parts).strip()))
        parts = []
    if parts:
        joined.append((start, " ".join(p.strip() for p in parts).strip()))
    return joined


def _without_comment(line: str) -> str:
    if line.startswith("#"):
        return ""
    return re.split(r"\s#", line, maxsplit=1)[0].strip()


def _pin(path: Path, number: int, content: str) -> Pin:
    head, _, _ = content.partition("--hash")
    if "--" in head:
        raise _damaged(path, number, "only `name==version --hash=sha256:...` lines belong there")
    found = _REQUIREMENT.match(head.strip())
    if found is None:
        raise _damaged(path, number, f"{head.strip()!r} is not `name==version`")
    hashes = tuple(_HASH.findall(content))
    if not hashes or len(hashes) != content.count("--hash"):
        raise _damaged(path, number, f"{found.group('name')} has no valid sha256 hash")
    return Pin(
        name=found.group("name"),
        extras=(found.group("extras") or "").replace(" ", ""),
        version=found.group("version"),
        markers=(found.group("markers") or "").strip(),
        hashes=hashes,
    )


def _damaged(path: Path, number: int, what: str) -> PinsError:
    return PinsError(
        f"The engine pins {path} are damaged (line {number}: {what}). Reinstall Roundhouse; "
        "a release writes these files with installers/refresh_engine_pins.py."
    )
