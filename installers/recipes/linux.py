"""Linux: the one-folder app with a .desktop file, icons and install scripts, as a tarball.

AppImage would need appimagetool, a binary downloaded from GitHub that these build machines
cannot reach (ADR 20); a tarball needs nothing but Python's tarfile.
"""

from __future__ import annotations

import gzip
import shutil
import stat
import tarfile
from pathlib import Path

from recipes.common import INSTALLERS, arch, source_epoch, version
from recipes.icons import IconSet

# Copied into the top folder of the tarball beside the `roundhouse` executable.
SCRIPTS = ("install.sh", "uninstall.sh")
DESKTOP_FILE = "roundhouse.desktop"


def package_name() -> str:
    return f"roundhouse-{version()}-linux-{arch()}"


def stage(frozen: Path, icons: IconSet, work: Path) -> Path:
    """The folder that becomes the tarball's single top folder."""
    folder = work / package_name()
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(frozen, folder, symlinks=True)
    shutil.copyfile(INSTALLERS / "linux" / DESKTOP_FILE, folder / DESKTOP_FILE)
    for script in SCRIPTS:
        shutil.copyfile(INSTALLERS / "linux" / script, folder / script)
        (folder / script).chmod(0o755)
    icon_dir = folder / "icons"
    icon_dir.mkdir()
    for size, png in sorted(icons.pngs.items()):
        shutil.copyfile(png, icon_dir / f"roundhouse-{size}.png")
    shutil.copyfile(icons.svg, icon_dir / "roundhouse.svg")
    return folder


def _normalised(info: tarfile.TarInfo, epoch: int) -> tarfile.TarInfo:
    # Who built it and when must not show in the archive: the same checkout, the same bytes.
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = epoch
    if info.isdir() or info.mode & stat.S_IXUSR:
        info.mode = 0o755
    elif not info.issym():
        info.mode = 0o644
    return info


def write_tarball(folder: Path, target: Path) -> Path:
    """A reproducible .tar.gz of `folder`: sorted entries, fixed owner, time and modes."""
    epoch = source_epoch()
    target.parent.mkdir(parents=True, exist_ok=True)
    paths = sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).as_posix())
    partial = target.with_name(target.name + ".partial")
    with (
        partial.open("wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=epoch, compresslevel=6) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar,
    ):
        for path in [folder, *paths]:
            name = Path(folder.name, path.relative_to(folder)).as_posix()
            info = _normalised(tar.gettarinfo(str(path), arcname=name), epoch)
            if info.isfile():
                with path.open("rb") as data:
                    tar.addfile(info, data)
            else:
                tar.addfile(info)
    partial.replace(target)
    return target


def package(frozen: Path, icons: IconSet, work: Path, dist: Path) -> list[Path]:
    """dist/roundhouse-<version>-linux-<arch>.tar.gz."""
    folder = stage(frozen, icons, work)
    return [write_tarball(folder, dist / f"{folder.name}.tar.gz")]
