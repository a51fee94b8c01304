"""Build Roundhouse's installer for the OS this runs on: `.venv/bin/python installers/build.py`.

Makes the build environment from installers/requirements.lock (every file hash-checked),
renders the icons, freezes the app with PyInstaller (installers/roundhouse.spec, one
folder), then packages it: a tarball on Linux, a .dmg on macOS, an Inno Setup installer
on Windows. The work folder is emptied first, so the result depends on the checkout alone.
installers/README.md has the details, signing included.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

# Run as a script: this folder is on sys.path, so the steps import as `recipes`.
from recipes import buildenv, freeze, icons
from recipes.common import ROOT, BuildError, human, size_of, version


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="installers/build.py", description="Build the installer of this OS."
    )
    parser.add_argument(
        "--dist", type=Path, default=ROOT / "dist", help="where the packages go (dist/)"
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=ROOT / "build" / "installer",
        help="scratch folder: icons, PyInstaller's work, the frozen app (build/installer/)",
    )
    parser.add_argument(
        "--venv",
        type=Path,
        default=ROOT / "build" / "venv",
        help="the build environment, made from installers/requirements.lock (build/venv/)",
    )
    parser.add_argument(
        "--no-lock",
        action="store_true",
        help="freeze with this Python's own packages instead of the lock's (not for releases)",
    )
    parser.add_argument(
        "--frozen-only",
        action="store_true",
        help="stop after PyInstaller (no package, no signing)",
    )
    return parser.parse_args(argv)


def package(frozen: Path, icon_set: icons.IconSet, work: Path, dist: Path) -> list[Path]:
    """The packager of this OS (each imports its own tools only when it runs)."""
    if sys.platform.startswith("linux"):
        from recipes import linux

        return linux.package(frozen, icon_set, work, dist)
    if sys.platform == "darwin":
        from recipes import macos

        return macos.package(frozen, dist)
    if sys.platform == "win32":
        from recipes import windows

        return windows.package(frozen, icon_set, dist)
    raise BuildError(f"No installer recipe for {sys.platform}: Linux, macOS and Windows only.")


def build(args: argparse.Namespace) -> list[Path]:
    work: Path = args.work.resolve()
    dist: Path = args.dist.resolve()
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    print(f"== Roundhouse {version()} for {sys.platform}: work in {work}", flush=True)
    if args.no_lock:
        print("== --no-lock: freezing this Python's packages, not the lock's", flush=True)
        python = None
    else:
        python = buildenv.locked_python(args.venv.resolve())
    icon_set = icons.render_icons(ROOT / "resources" / "icons", work / "icons")
    frozen = freeze.freeze(work, icon_set.folder, python)
    if args.frozen_only:
        return [frozen]
    return [frozen, *package(frozen, icon_set, work, dist)]


def main(argv: list[str]) -> int:
    started = time.monotonic()
    try:
        outputs = build(parse_args(argv))
    except BuildError as exc:
        print(f"build.py: {exc}", file=sys.stderr)
        return 1
    print(f"== Built in {time.monotonic() - started:.0f} s:")
    for path in outputs:
        kind = "folder" if path.is_dir() else "file"
        print(f"   {path}  ({kind}, {human(size_of(path))})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
