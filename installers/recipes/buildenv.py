"""The build's Python: a virtual environment that holds installers/requirements.lock, checked."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

from recipes.common import INSTALLERS, BuildError, run

LOCK = INSTALLERS / "requirements.lock"
# Written into the environment once the lock is installed: the lock's sha256.
STAMP = ".roundhouse-lock-sha256"


def venv_python(venv: Path) -> Path:
    if sys.platform == "win32":
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def locked_python(venv: Path) -> Path:
    """The interpreter of `venv`, made from the lock when it is missing or older than it.

    pip runs with --require-hashes and --only-binary=:all:, so every file it installs is the
    one the lock names and no build step runs; the environment is reused while the lock is
    unchanged (a stamp inside it holds the lock's sha256).
    """
    try:
        digest = hashlib.sha256(LOCK.read_bytes()).hexdigest()
    except OSError as exc:
        raise BuildError(
            f"Cannot read {LOCK} ({exc.strerror}): restore it from git, or write it with "
            "installers/refresh_engine_pins.py --build-lock."
        ) from exc
    python = venv_python(venv)
    stamp = venv / STAMP
    if python.is_file() and _read(stamp) == digest:
        print(f"== Build environment {venv}: up to date with {LOCK.name}", flush=True)
        return python
    if venv.exists():
        shutil.rmtree(venv)
    run([sys.executable, "-m", "venv", str(venv)], what="Build environment")
    run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--progress-bar",
            "off",
            "--require-hashes",
            "--only-binary=:all:",
            "-r",
            str(LOCK),
        ],
        what=f"Build environment from {LOCK.name}",
    )
    _check_pyinstaller(python)
    stamp.write_text(digest + "\n", encoding="utf-8")
    return python


def _check_pyinstaller(python: Path) -> None:
    done = subprocess.run(
        [str(python), "-c", "import PyInstaller"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise BuildError(
            f"{LOCK.name} installed, but PyInstaller does not import from it: refresh the lock "
            "(installers/refresh_engine_pins.py --build-lock)."
        )


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
