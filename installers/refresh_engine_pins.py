"""Refresh what a release pins: the Python engines' versions and hashes, and the build's lock.

    .venv/bin/python installers/refresh_engine_pins.py                  # all of it
    .venv/bin/python installers/refresh_engine_pins.py --engine vllm --hold vllm==0.33.0
    .venv/bin/python installers/refresh_engine_pins.py --build-lock     # the build's lock only

For each Python engine of the catalog and each platform it runs on, the engine's packages
(catalog `pip_requirements`) are pinned at their newest release (or the `--hold` version) and
resolved with `uv pip compile --universal --generate-hashes --only-binary :all:` for that
platform, for every Python version from the floor up: `resources/engines/pins/<engine>/
<os>-<arch>.txt`, `# pins: all`. uv reads each package's metadata from the index, so no wheel
is downloaded, and it resolves for another OS than the one it runs on. Where a platform cannot
be resolved, the file pins the engine's own packages only, with the sha256 of each of their
files from PyPI's JSON API and the reason: `# pins: top-level`.

installers/requirements.lock is the build's: Roundhouse's dependencies and PyInstaller,
resolved the same way for every OS; installers/build.py installs it with --require-hashes.
Needs uv (`.venv/bin/pip install -e '.[dev]'` brings it) and the network.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PINS = ROOT / "resources" / "engines" / "pins"
BUILD_LOCK = ROOT / "installers" / "requirements.lock"
INDEX = "https://pypi.org/simple"
JSON_API = "https://pypi.org/pypi"
# Roundhouse's own floor: an engine's environment is made from a Python 3.11 or later.
PYTHON_FLOOR = (3, 11)
OS_WORDS = {"Darwin": "macOS", "Linux": "Linux", "Windows": "Windows"}
SYS_PLATFORM = {"Darwin": "darwin", "Linux": "linux", "Windows": "win32"}
# platform.machine() as each OS spells the catalog's architectures.
MACHINE = {
    ("Darwin", "arm64"): "arm64",
    ("Darwin", "x86_64"): "x86_64",
    ("Linux", "arm64"): "aarch64",
    ("Linux", "x86_64"): "x86_64",
    ("Windows", "arm64"): "ARM64",
    ("Windows", "x86_64"): "AMD64",
}

sys.path.insert(0, str(ROOT / "app"))

from roundhouse.api.engines import EngineId  # noqa: E402
from roundhouse.core.engines.catalog import load_catalog  # noqa: E402
from roundhouse.core.engines.install.hints import pip_requirements  # noqa: E402
from roundhouse.core.engines.install.jobs import PYTHON_ENGINES  # noqa: E402
from roundhouse.core.engines.install.pins import normalized, platform_key  # noqa: E402


class RefreshError(RuntimeError):
    """A step failed: the message says which and what to do."""


@dataclass(frozen=True)
class Release:
    name: str
    version: str
    requires_python: str
    # sha256 of every file of this version (wheels and source archive).
    hashes: tuple[str, ...]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="installers/refresh_engine_pins.py",
        description="Pin the Python engines and the build's dependencies, with hashes.",
    )
    parser.add_argument(
        "--engine", action="append", default=[], help="only this engine (mlx, vllm, sglang)"
    )
    parser.add_argument(
        "--hold",
        action="append",
        default=[],
        metavar="NAME==VERSION",
        help="pin this package at this version instead of its newest release",
    )
    parser.add_argument("--build-lock", action="store_true", help="only the build's lock")
    parser.add_argument("--no-build-lock", action="store_true", help="only the engines' pins")
    parser.add_argument("--index-url", default=INDEX, help=f"the package index ({INDEX})")
    parser.add_argument("--pins", type=Path, default=PINS, help="where the engines' pins go")
    return parser.parse_args(argv)


def uv_command() -> str:
    beside = Path(sys.executable).with_name("uv")
    found = str(beside) if beside.is_file() else shutil.which("uv")
    if found is None:
        raise RefreshError(
            "uv is not installed: `.venv/bin/pip install -e '.[dev]'` (or `pip install uv`), "
            "then run this again."
        )
    return found


def release(name: str, version: str | None) -> Release:
    """A release's facts from PyPI's JSON API: the newest when `version` is None."""
    url = f"{JSON_API}/{name}/json" if version is None else f"{JSON_API}/{name}/{version}/json"
    try:
        with urllib.request.urlopen(url, timeout=60) as answer:
            page = json.load(answer)
    except (OSError, ValueError) as exc:
        raise RefreshError(f"Cannot read {url}: {exc}") from exc
    info = page["info"]
    files = [f for f in page["urls"] if not f.get("yanked")]
    if not files:
        raise RefreshError(f"{name} {info['version']} has no files on the index.")
    return Release(
        name=name,
        version=info["version"],
        requires_python=info.get("requires_python") or "",
        hashes=tuple(sorted(f["digests"]["sha256"] for f in files)),
    )


def python_floor(requires: str) -> str:
    """The lowest Python to resolve for: Roundhouse's floor, or the package's if higher."""
    floor = PYTHON_FLOOR
    for found in re.finditer(r">=\s*(\d+)\.(\d+)", requires):
        floor = max(floor, (int(found.group(1)), int(found.group(2))))
    return f"{floor[0]}.{floor[1]}"


def split_extras(spec: str) -> tuple[str, str]:
    found = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?", spec.strip())
    if found is None:
        raise RefreshError(f"The catalog's pip requirement {spec!r} is not `name[extras]`.")
    return found.group(1), found.group(2) or ""


def compile_lock(
    uv: str, requirements: list[str], python: str, index: str, output: Path
) -> str | None:
    """Resolve with uv into `output`; None on success, else uv's reason in one line."""
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "requirements.in"
        source.write_text("\n".join(requirements) + "\n", encoding="utf-8")
        argv = [
            uv,
            "pip",
            "compile",
            str(source),
            "--universal",
            "--generate-hashes",
            "--only-binary",
            ":all:",
            "--python-version",
            python,
            "--no-header",
            "--no-config",
            "--index-url",
            index,
            "--output-file",
            str(output),
        ]
        print(f"   uv pip compile ({', '.join(requirements)}) for Python {python}+", flush=True)
        # uv's own settings must not steer a release's pins.
        env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
        done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
        if done.returncode == 0:
            # The annotations name the temporary input file: name what it held instead.
            text = output.read_text(encoding="utf-8").replace(f"-r {source}", "-r (the pins)")
            output.write_text(text, encoding="utf-8")
            return None
        lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
        cause = next((ln for ln in lines if ln.startswith(("cause:", "error:"))), None)
        return (cause or (lines[0] if lines else f"uv exited {done.returncode}"))[:300]


def engine_pins(uv: str, engine: str, holds: dict[str, str], index: str, pins: Path) -> None:
    spec = load_catalog().spec(EngineId(engine))
    for place in spec.platforms:
        key = platform_key(place.os, MACHINE[(place.os, place.arch)])
        where = f"{OS_WORDS[place.os]} {place.arch}"
        print(f"== {engine} on {where}", flush=True)
        top = [split_extras(s) for s in pip_requirements(spec, place.os)]
        releases = {name: release(name, holds.get(normalized(name))) for name, _ in top}
        main = releases[next(iter(releases))]
        python = python_floor(main.requires_python)
        markers = (
            f"sys_platform == '{SYS_PLATFORM[place.os]}' and "
            f"platform_machine == '{MACHINE[(place.os, place.arch)]}'"
        )
        wanted = [f"{n}{x}=={releases[n].version} ; {markers}" for n, x in top]
        names = ", ".join(f"{n}{x} {releases[n].version}" for n, x in top)
        target = pins / engine / f"{key}.txt"
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as scratch:
            locked = Path(scratch) / "lock.txt"
            why = compile_lock(uv, wanted, python, index, locked)
            header = [
                f"# Roundhouse engine pins: {engine} ({names}) on {where}, Python {python}+.",
                "# Written by installers/refresh_engine_pins.py at each release; do not edit.",
                "# Installed with pip install --require-hashes --only-binary=:all: -r <this file>",
                "# (docs/engines-install.md).",
            ]
            if why is None:
                body = locked.read_text(encoding="utf-8")
                header.append("# pins: all")
            else:
                print(f"   could not resolve: {why}\n   pinning {names} alone", flush=True)
                header += ["# pins: top-level", f"# why: {_one_line(why)}"]
                body = "".join(
                    f"{n}{x}=={releases[n].version} \\\n"
                    + " \\\n".join(f"    --hash=sha256:{h}" for h in releases[n].hashes)
                    + "\n"
                    for n, x in top
                )
        target.write_text("\n".join(header) + "\n" + body, encoding="utf-8")
        print(f"   wrote {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")


def build_lock(uv: str, index: str) -> None:
    """Roundhouse's dependencies with the app's, and PyInstaller, for every OS, as the build
    installs them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    tools = [r for r in extras["dev"] if _name(r) == "pyinstaller"]
    # The installers carry the desktop app: its Qt packages are the `gui` extra (ADR 35).
    wanted = [*project["dependencies"], *extras["gui"], *tools]
    print("== the build's lock", flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        locked = Path(scratch) / "lock.txt"
        why = compile_lock(uv, wanted, ".".join(map(str, PYTHON_FLOOR)), index, locked)
        if why is not None:
            raise RefreshError(f"The build's dependencies do not resolve: {why}")
        header = [
            "# The build's lock: Roundhouse's dependencies (pyproject.toml) and PyInstaller, every",
            f"# OS, Python {'.'.join(map(str, PYTHON_FLOOR))}+. Written by "
            "installers/refresh_engine_pins.py; do not edit.",
            "# installers/build.py installs it with pip --require-hashes --only-binary=:all:.",
        ]
        text = locked.read_text(encoding="utf-8")
    BUILD_LOCK.write_text("\n".join(header) + "\n" + text, encoding="utf-8")
    print(f"   wrote {BUILD_LOCK.relative_to(ROOT)}")


def _name(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    return normalized(found.group(0)) if found else ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    holds: dict[str, str] = {}
    for hold in args.hold:
        name, sep, version = hold.partition("==")
        if not sep or not version:
            print(f"refresh_engine_pins.py: --hold {hold!r} is not NAME==VERSION", file=sys.stderr)
            return 2
        holds[normalized(name)] = version
    known = [e.value for e in PYTHON_ENGINES]
    engines = args.engine or known
    unknown = sorted(set(engines) - set(known))
    if unknown:
        print(
            f"refresh_engine_pins.py: no Python engine {unknown}; one of {known}", file=sys.stderr
        )
        return 2
    try:
        uv = uv_command()
        if not args.build_lock:
            for engine in engines:
                engine_pins(uv, engine, holds, args.index_url, args.pins)
        if not args.no_build_lock and not args.engine:
            build_lock(uv, args.index_url)
    except RefreshError as exc:
        print(f"refresh_engine_pins.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
