"""Options saved per model and engine under a name, kept in one JSON file."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import Preset
from roundhouse.base.files import write_atomic
from roundhouse.core.errors import NotFoundError, SettingsError
from roundhouse.core.infra.changes import Changes

log = logging.getLogger(__name__)

PRESETS_FILE = "presets.json"
_PRESETS = TypeAdapter(list[Preset])


class PresetStore:
    """Presets in `config_dir/presets.json`; the whole file is rewritten atomically."""

    def __init__(self, config_dir: Path) -> None:
        self.path = config_dir / PRESETS_FILE
        self._lock = threading.Lock()
        # Touched at each save or delete (in the event loop's thread, where both are called):
        # what the gateway can start follows the presets.
        self.changes = Changes()

    def find(self, engine: EngineId | None = None, model: str | None = None) -> list[Preset]:
        return [
            p
            for p in self._load()
            if (engine is None or p.engine == engine) and (model is None or p.model == model)
        ]

    def get(self, engine: EngineId, model: str, name: str) -> Preset:
        for preset in self.find(engine, model):
            if preset.name == name:
                return preset
        raise NotFoundError(
            f"No preset named {name!r} is saved for {model} on {engine.value}. "
            "List them with `roundhouse engines presets`."
        )

    def save(self, preset: Preset) -> Preset:
        """Add `preset`, replacing one with the same engine, model and name."""
        if preset.options.model != preset.model:
            preset = preset.model_copy(
                update={"options": preset.options.model_copy(update={"model": preset.model})}
            )
        with self._lock:
            kept = [p for p in self._load() if _key(p) != _key(preset)]
            self._write([*kept, preset])
        self.changes.touch()
        return preset

    def delete(self, engine: EngineId, model: str, name: str) -> None:
        with self._lock:
            presets = self._load()
            kept = [p for p in presets if _key(p) != (engine, model, name)]
            if len(kept) == len(presets):
                raise NotFoundError(f"No preset named {name!r} is saved for {model}.")
            self._write(kept)
        self.changes.touch()

    def _load(self) -> list[Preset]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            return _PRESETS.validate_python(json.loads(raw))
        except (ValueError, ValidationError) as exc:
            raise SettingsError(
                f"The presets file {self.path} cannot be read ({exc.__class__.__name__}). "
                "Fix it or move it away; Roundhouse starts with no presets without it."
            ) from exc

    def _write(self, presets: list[Preset]) -> None:
        presets.sort(key=_key)
        write_atomic(self.path, _PRESETS.dump_json(presets, indent=2))


def _key(preset: Preset) -> tuple[EngineId, str, str]:
    return (preset.engine, preset.model, preset.name)
