"""Find the bundled resources folder: installed wheel, editable checkout or frozen build."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path


class ResourcesNotFoundError(RuntimeError):
    """The resources folder is missing: the installation is broken."""


@cache
def resources_dir() -> Path:
    """The folder that holds icons, stylesheets and data files."""
    package_dir = Path(__file__).resolve().parent.parent
    candidates = [
        # A wheel carries them inside the package (hatchling force-include).
        package_dir / "resources",
        # An editable install or a plain checkout: app/roundhouse -> ../../resources.
        package_dir.parent.parent / "resources",
    ]
    frozen_root = getattr(sys, "_MEIPASS", None)
    if frozen_root is not None:
        candidates.insert(0, Path(frozen_root) / "roundhouse" / "resources")
    for candidate in candidates:
        if (candidate / "icons").is_dir():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise ResourcesNotFoundError(f"Roundhouse's resources are missing (looked in {tried}).")


def resource_path(*parts: str) -> Path:
    """A file inside the resources folder."""
    return resources_dir().joinpath(*parts)
