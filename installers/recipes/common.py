"""What every packager needs: the checkout's version, the machine, commands, sizes."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INSTALLERS = ROOT / "installers"
SPEC = INSTALLERS / "roundhouse.spec"
# A stable date for archives and PyInstaller (2020-01-01), used when neither
# SOURCE_DATE_EPOCH nor a git commit gives one.
FALLBACK_EPOCH = 1577836800


class BuildError(RuntimeError):
    """A step failed: the message says which and what to do."""


def version() -> str:
    """Roundhouse's version, read from the source (the wheel reads the same line)."""
    text = (ROOT / "app" / "roundhouse" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"', text, re.MULTILINE)
    if found is None:
        raise BuildError("app/roundhouse/__init__.py has no __version__ line")
    return found.group(1)


def arch() -> str:
    """The machine in the names packages use: x86_64, aarch64 (arm64 on macOS)."""
    machine = platform.machine().lower()
    aliases = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}
    machine = aliases.get(machine, machine)
    if sys.platform == "darwin" and machine == "aarch64":
        return "arm64"
    return machine


def source_epoch() -> int:
    """The time stamped into archives: SOURCE_DATE_EPOCH, else the last commit's time.

    The same checkout then gives the same archive, byte for byte, whenever it is built."""
    configured = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if configured.isdigit():
        return int(configured)
    git = shutil.which("git")
    if git is not None:
        done = subprocess.run(
            [git, "-C", str(ROOT), "log", "-1", "--format=%ct"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode == 0 and done.stdout.strip().isdigit():
            return int(done.stdout.strip())
    return FALLBACK_EPOCH


def run(argv: Sequence[str], *, env: Mapping[str, str] | None = None, what: str) -> None:
    """Run one step of the build with its output on the terminal; a failure stops it."""
    print(f"== {what}: {' '.join(argv)}", flush=True)
    try:
        done = subprocess.run(list(argv), env=None if env is None else dict(env), check=False)
    except OSError as exc:
        raise BuildError(f"{what} could not start {argv[0]}: {exc}") from exc
    if done.returncode != 0:
        raise BuildError(f"{what} failed (exit {done.returncode}); its output is above.")


def tool(name: str, hint: str) -> str:
    """The path of a command the build needs, or a BuildError saying how to get it."""
    found = shutil.which(name)
    if found is None:
        raise BuildError(f"`{name}` was not found on PATH: {hint}")
    return found


def size_of(path: Path) -> int:
    """Bytes in a file, or in every file under a folder (links not followed)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.2f} GiB"
