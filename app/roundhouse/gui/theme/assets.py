"""The stylesheet's images (a check mark, the arrows of combo and spin boxes), recoloured.

A stylesheet names images by path, and its colours change with the scheme: each glyph is
written once per colour to a private folder of this process (removed when it exits).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import cache
from pathlib import Path

from roundhouse.base.resources import resource_path


@cache
def _folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="roundhouse-theme-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@cache
def glyph_path(name: str, colour: str) -> str:
    """Lucide's `name` drawn in `colour`, as a path a stylesheet's url() takes."""
    svg = resource_path("icons", "ui", f"{name}.svg").read_text(encoding="utf-8")
    target = _folder() / f"{name}-{colour.lstrip('#')}.svg"
    target.write_text(svg.replace("currentColor", colour), encoding="utf-8")
    # Forward slashes: url() wants them on Windows too.
    return target.as_posix()
