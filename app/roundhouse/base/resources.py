"""Find the bundled resources folder: installed wheel, editable checkout or frozen build."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any


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


def read_toml(path: Path, what: str, error: type[Exception]) -> dict[str, Any]:
    """A data file's TOML; raises `error` with a message naming `what` and the file when it
    cannot be read or is not TOML."""
    # Imported here: the window's first paint reads icons from this module, not TOML.
    import tomllib

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise error(f"Cannot read the {what} {path}: {exc.strerror}.") from exc
    except tomllib.TOMLDecodeError as exc:
        raise error(f"The {what} {path} is not valid TOML: {exc}.") from exc
