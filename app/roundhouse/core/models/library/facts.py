"""What the library shows of a model's files, and a cache of it keyed by each file's size and
modification time, in memory and in a JSON file, so a warm scan reads no headers."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from roundhouse.base.files import write_atomic

log = logging.getLogger(__name__)

CACHE_VERSION = 2
MAX_CACHE_ENTRIES = 50_000
MAX_CACHE_FILE_BYTES = 32 * 1024 * 1024

# (size, mtime_ns) of each file a fact was read from; a change in any means read again.
Stamp = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class ModelFacts:
    architecture: str | None = None
    name: str | None = None  # general.name of a GGUF
    parameter_count: int | None = None
    parameter_label: str | None = None  # general.size_label of a GGUF: "8B", "30B-A3B"
    quantization: str | None = None
    context_length: int | None = None
    mlx: bool = False  # a safetensors folder written for mlx-lm
    error: str | None = None  # why the file cannot be read; the model is still listed
    # False while only a GGUF's first metadata has been read (the quick probe): the whole
    # header (exact parameter count, tensors inside the file) is read in the background.
    checked: bool = True


# Reads a GGUF file's header and says what it holds; blocking; raises on a bad file.
GgufProbe = Callable[[Path], ModelFacts]


class FactsCache:
    """Facts by key (a file's or folder's path) and stamp; `path` None keeps it in memory."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._entries: dict[str, tuple[Stamp, ModelFacts]] = {}
        self._dirty = False
        if path is not None:
            self._load(path)

    def get(self, key: str, stamp: Stamp) -> ModelFacts | None:
        found = self._entries.get(key)
        return found[1] if found is not None and found[0] == stamp else None

    def put(self, key: str, stamp: Stamp, facts: ModelFacts) -> None:
        if self._entries.get(key) != (stamp, facts):
            self._entries[key] = (stamp, facts)
            self._dirty = True

    def keep_only(self, keys: set[str]) -> None:
        """Forget what the last scan did not see (deleted or moved files)."""
        gone = [k for k in self._entries if k not in keys]
        for key in gone:
            del self._entries[key]
        self._dirty = self._dirty or bool(gone)

    def __len__(self) -> int:
        return len(self._entries)

    def save(self) -> None:
        """Write the cache when it changed; a failure only costs a slower next start."""
        if self.path is None or not self._dirty:
            return
        entries = list(self._entries.items())[-MAX_CACHE_ENTRIES:]
        data = {
            "version": CACHE_VERSION,
            "entries": {k: {"stamp": s, "facts": asdict(f)} for k, (s, f) in entries},
        }
        try:
            write_atomic(self.path, json.dumps(data, ensure_ascii=False).encode("utf-8"))
            self._dirty = False
        except OSError as exc:
            log.warning("Cannot save the model library's cache to %s: %s", self.path, exc)

    def _load(self, path: Path) -> None:
        try:
            if path.stat().st_size > MAX_CACHE_FILE_BYTES:
                return
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            log.warning("Ignoring the model library's cache %s: %s", path, exc)
            return
        if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
            return
        entries = data.get("entries")
        if not isinstance(entries, dict):
            return
        for key, value in list(entries.items())[:MAX_CACHE_ENTRIES]:
            parsed = _parse_entry(value)
            if isinstance(key, str) and parsed is not None:
                self._entries[key] = parsed


_FIELD_TYPES = {f.name: f.type for f in fields(ModelFacts)}


def _parse_entry(value: object) -> tuple[Stamp, ModelFacts] | None:
    """One cached entry, or None when any part is not what this version writes."""
    if not isinstance(value, dict):
        return None
    stamp, facts = value.get("stamp"), value.get("facts")
    if not isinstance(stamp, list) or not isinstance(facts, dict):
        return None
    pairs: list[tuple[int, int]] = []
    for pair in stamp:
        if not (isinstance(pair, list) and len(pair) == 2 and all(type(n) is int for n in pair)):
            return None
        pairs.append((pair[0], pair[1]))
    if set(facts) != set(_FIELD_TYPES):
        return None
    for name, item in facts.items():
        if not _fits(item, _FIELD_TYPES[name]):
            return None
    return tuple(pairs), ModelFacts(**facts)


def _fits(item: object, declared: object) -> bool:
    text = str(declared)
    if item is None:
        return "None" in text
    if text.startswith("bool"):
        return isinstance(item, bool)
    if text.startswith("int"):
        return type(item) is int
    return isinstance(item, str)
