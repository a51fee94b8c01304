"""The frozen Linux build for tests: built once by installers/build.py, cached by its inputs.

The cache key hashes every file PyInstaller reads from the checkout (the package, the
resources, the installer recipes and the build's lock), the interpreter and every installed
distribution's version, so a rerun with nothing changed reuses the tarball and any change
rebuilds it. Only the tarball is kept: the tests unpack it as a user would. The build
environment build.py makes from installers/requirements.lock is kept beside it, and made
again only when the lock changes (pip's cache then holds most of its wheels).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.engines.llama_server import cache_root

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "installers" / "build.py"
INPUTS = (ROOT / "app" / "roundhouse", ROOT / "resources", ROOT / "installers")
# PyInstaller takes about a minute on two cores, the tarball half a minute more.
BUILD_TIMEOUT_S = 900


class FrozenBuildError(RuntimeError):
    """installers/build.py failed: the message ends with the tail of its log."""


def pyinstaller_missing() -> bool:
    return importlib.util.find_spec("PyInstaller") is None


def inputs_key() -> str:
    digest = hashlib.sha256(sys.version.encode())
    for base in INPUTS:
        for path in sorted(base.rglob("*")):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    installed = sorted(
        f"{dist.metadata['Name']}=={dist.version}" for dist in importlib.metadata.distributions()
    )
    digest.update("\n".join(installed).encode())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    # Two test sessions at once must not build into the same folder.
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def frozen_tarball() -> Path:
    """The tarball of this checkout's frozen build, built now unless cached."""
    root = cache_root() / "frozen"
    key = inputs_key()
    entry = root / key
    with _locked(root):
        done = entry / "complete"
        built = sorted((entry / "dist").glob("roundhouse-*-linux-*.tar.gz"))
        if done.exists() and len(built) == 1:
            return built[0]
        # Older builds are of other inputs: only the newest is worth its 100 MB.
        for stale in root.iterdir():
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
        entry.mkdir(parents=True)
        log = entry / "build.log"
        with log.open("wb") as out:
            finished = subprocess.run(
                [
                    sys.executable,
                    str(BUILD_SCRIPT),
                    "--dist",
                    str(entry / "dist"),
                    "--work",
                    str(entry / "work"),
                    "--venv",
                    str(cache_root() / "frozen-build-venv"),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=BUILD_TIMEOUT_S,
                check=False,
            )
        shutil.rmtree(entry / "work", ignore_errors=True)
        if finished.returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
            raise FrozenBuildError(f"installers/build.py exited {finished.returncode}:\n{tail}")
        built = sorted((entry / "dist").glob("roundhouse-*-linux-*.tar.gz"))
        if len(built) != 1:
            raise FrozenBuildError(f"installers/build.py left {built} in {entry / 'dist'}")
        done.touch()
        return built[0]
