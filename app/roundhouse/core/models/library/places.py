"""Where the library looks: the hub cache, the user's folders, Roundhouse's imports, LM Studio."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub.constants import HF_HUB_CACHE

from roundhouse.api.settings import Settings

IMPORTED_DIR = "imported-models"
_LMSTUDIO_SETTINGS_MAX = 1024 * 1024


def hub_cache_dir(models_dir: str | None) -> Path:
    """Where models live: `settings.models_dir` when set, else huggingface_hub's cache
    (HF_HUB_CACHE, HF_HOME), so what Roundhouse downloads is what vLLM, mlx-lm and
    `llama-server -hf` find."""
    if models_dir and models_dir.strip():
        return Path(models_dir.strip()).expanduser()
    return Path(HF_HUB_CACHE)


@dataclass(frozen=True)
class LibraryPlaces:
    hub_cache: Path
    folders: tuple[Path, ...] = ()  # added by the user
    imported: Path | None = None  # where imports go unless a folder is chosen
    lmstudio: tuple[Path, ...] = ()

    def file_roots(self) -> list[Path]:
        """Every folder the library may delete in, besides the hub cache."""
        roots = [*self.folders, *self.lmstudio]
        if self.imported is not None:
            roots.append(self.imported)
        return roots


def library_places(
    models_dir: str | None,
    folders: Sequence[str],
    data_dir: Path,
    home: Path | None = None,
) -> LibraryPlaces:
    """The places for these settings; `home` None means the user's (LM Studio lives there)."""
    chosen = tuple(dict.fromkeys(Path(f.strip()).expanduser() for f in folders if f and f.strip()))
    return LibraryPlaces(
        hub_cache=hub_cache_dir(models_dir),
        folders=chosen,
        imported=data_dir / IMPORTED_DIR,
        lmstudio=tuple(lmstudio_folders(home if home is not None else Path.home())),
    )


def lmstudio_folders(home: Path) -> list[Path]:
    """LM Studio's models folders that exist: the one its settings name (downloadsFolder),
    ~/.lmstudio/models (0.3 and later) and ~/.cache/lm-studio/models (older versions)."""
    candidates: list[Path] = []
    configured = _lmstudio_setting(home / ".lmstudio" / "settings.json")
    if configured is not None:
        candidates.append(configured)
    candidates += [home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"]
    found: dict[Path, Path] = {}
    for folder in candidates:
        try:
            if folder.is_dir():
                found.setdefault(folder.resolve(), folder)
        except OSError:
            continue
    return list(found.values())


def _lmstudio_setting(path: Path) -> Path | None:
    try:
        if path.stat().st_size > _LMSTUDIO_SETTINGS_MAX:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("downloadsFolder") if isinstance(data, dict) else None
    return Path(value).expanduser() if isinstance(value, str) and value.strip() else None


def places_from_settings(
    settings: Settings, data_dir: Path, home: Path | None = None
) -> LibraryPlaces:
    """The places the saved settings name (models_dir, models.library_folders)."""
    return library_places(settings.models_dir, settings.models.library_folders, data_dir, home)
