"""Render the app icon from resources/icons/roundhouse.svg with Qt's own SVG renderer."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from recipes.icon_files import ICNS_SIZES, ICNS_TYPES, ICO_SIZES, icns_bytes, ico_bytes

# The hicolor theme sizes a Linux desktop looks up (plus the SVG as `scalable`).
LINUX_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
APP_SVG = "roundhouse.svg"


@dataclass(frozen=True)
class IconSet:
    """What render_icons wrote: one PNG per size, the .ico, the .icns and the SVG."""

    folder: Path
    pngs: dict[int, Path]
    ico: Path
    icns: Path
    svg: Path


def render_png(svg: Path, size: int) -> bytes:
    """The SVG drawn into a transparent size x size PNG."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise RuntimeError(f"{svg} is not an SVG that Qt can draw")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(0)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    # PySide6 takes the format as str here, whatever its stubs say.
    if not image.save(buffer, "PNG"):  # type: ignore[call-overload]
        raise RuntimeError(f"Qt could not encode the {size} px icon as PNG")
    buffer.close()
    return bytes(data.data())


def _qt_app() -> object:
    # QImage and QPainter need a QGuiApplication for fonts; offscreen needs no display.
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    return QGuiApplication.instance() or QGuiApplication(["roundhouse-build"])


def image_count(path: Path) -> int:
    """How many images Qt reads from an .ico or .icns: the check that the file is sound."""
    from PySide6.QtGui import QImageReader

    reader = QImageReader(str(path))
    count = reader.imageCount()
    if not reader.canRead() or reader.read().isNull():
        return 0
    return count


def render_icons(icons_dir: Path, out: Path) -> IconSet:
    """Every icon file the builds need, written into `out` (emptied first)."""
    _qt_app()
    svg = icons_dir / APP_SVG
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    sizes = sorted({*LINUX_SIZES, *ICO_SIZES, *ICNS_SIZES})
    pngs = {size: render_png(svg, size) for size in sizes}
    files: dict[int, Path] = {}
    for size in LINUX_SIZES:
        files[size] = out / f"roundhouse-{size}.png"
        files[size].write_bytes(pngs[size])
    ico = out / "roundhouse.ico"
    ico.write_bytes(ico_bytes(pngs))
    icns = out / "roundhouse.icns"
    icns.write_bytes(icns_bytes(pngs))
    # Read back with Qt's own ico and icns readers: a malformed file fails the build here.
    for container, expected in ((ico, len(ICO_SIZES)), (icns, len(ICNS_TYPES))):
        found = image_count(container)
        if found != expected:
            raise RuntimeError(f"Qt reads {found} of {expected} images from {container}")
    copied = out / APP_SVG
    shutil.copyfile(svg, copied)
    return IconSet(out, files, ico, icns, copied)
