"""Run PyInstaller on installers/roundhouse.spec: the one-folder app (the .app on macOS)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from recipes.common import ROOT, SPEC, BuildError, run, source_epoch


def frozen_output(work: Path) -> Path:
    """Where PyInstaller leaves the app under the work folder."""
    dist = work / "pyinstaller-dist"
    return dist / "Roundhouse.app" if sys.platform == "darwin" else dist / "roundhouse"


def freeze(work: Path, icons: Path, python: Path | None = None) -> Path:
    """Build the frozen app from the checkout, starting from nothing each time, with the
    packages of `python` (the build environment's; None: this interpreter's own)."""
    if python is None and importlib.util.find_spec("PyInstaller") is None:
        raise BuildError(
            "PyInstaller is not installed in this Python: install the dev extra "
            "(`.venv/bin/pip install -e '.[dev]'`) and run this script with .venv/bin/python."
        )
    env = {
        **os.environ,
        # The spec imports roundhouse to list its modules: from the checkout, which the
        # build environment does not install.
        "PYTHONPATH": str(ROOT / "app"),
        # PyInstaller's advice for reproducible builds: a fixed hash seed and date.
        "PYTHONHASHSEED": "0",
        "SOURCE_DATE_EPOCH": str(source_epoch()),
        # collect_submodules imports the GUI modules: Qt must not look for a display.
        "QT_QPA_PLATFORM": "offscreen",
    }
    run(
        [
            str(python or sys.executable),
            "-m",
            "PyInstaller",
            str(SPEC),
            "--noconfirm",
            "--clean",  # no cache from an earlier build: the output depends on the checkout
            "--log-level",
            "WARN",
            "--distpath",
            str(work / "pyinstaller-dist"),
            "--workpath",
            str(work / "pyinstaller-work"),
            "--",
            "--icons",
            str(icons),
        ],
        env=env,
        what="PyInstaller",
    )
    output = frozen_output(work)
    if not output.exists():
        raise BuildError(f"PyInstaller finished but {output} is missing.")
    return output
