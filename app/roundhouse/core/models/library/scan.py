"""One blocking pass over the library's folders (the service runs it in a thread)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from roundhouse.api.library import LibraryPlace, LibrarySource
from roundhouse.core.models.hub.quants import GgufGroup
from roundhouse.core.models.library.hf_cache import scan_hf_cache
from roundhouse.core.models.library.places import LibraryPlaces
from roundhouse.core.models.library.records import (
    FactsReader,
    Record,
    gguf_records,
    model_dir_record,
)
from roundhouse.core.models.library.walk import LocalFile, problems_text, walk_folder


@dataclass
class FileScan:
    records: list[Record] = field(default_factory=list)
    places: list[LibraryPlace] = field(default_factory=list)


def scan_places(places: LibraryPlaces, facts: FactsReader, apple_silicon: bool) -> FileScan:
    out = FileScan()
    seen_caches: set[Path] = set()

    def add_cache(cache: Path) -> None:
        key = _identity(cache)
        if key in seen_caches:
            return
        seen_caches.add(key)
        records, place = scan_hf_cache(cache, facts, apple_silicon=apple_silicon)
        out.records.extend(records)
        out.places.append(place)

    add_cache(places.hub_cache)
    folders = [(f, LibrarySource.FOLDER) for f in places.folders]
    if places.imported is not None:
        folders.append((places.imported, LibrarySource.FOLDER))
    folders += [(f, LibrarySource.LMSTUDIO) for f in places.lmstudio]
    seen_folders: set[Path] = set()
    for folder, source in folders:
        key = _identity(folder)
        if key in seen_folders:
            continue
        seen_folders.add(key)
        if folder == places.imported and not folder.exists():
            continue  # nothing imported yet: not worth a line
        records, place, caches = _scan_folder(folder, source, facts, apple_silicon)
        out.records.extend(records)
        out.places.append(place)
        for cache in caches:
            add_cache(cache)
    return out


def _scan_folder(
    root: Path, source: LibrarySource, facts: FactsReader, apple_silicon: bool
) -> tuple[list[Record], LibraryPlace, list[Path]]:
    if not root.is_dir():
        missing = LibraryPlace(
            source=source,
            location=str(root),
            available=False,
            error="The folder does not exist (or is not a folder): check the path.",
        )
        return [], missing, []
    walked = walk_folder(root)

    def namer(group: GgufGroup[LocalFile]) -> tuple[str, str | None]:
        return _name(root, source, group)

    records = gguf_records(walked.ggufs, source, root, facts, namer, apple_silicon=apple_silicon)
    for folder in walked.model_dirs:
        repo = _repo_of(root, folder.path) if source is LibrarySource.LMSTUDIO else None
        name = repo or folder.path.name
        records.append(
            model_dir_record(folder, source, root, facts, name, repo, apple_silicon=apple_silicon)
        )
    place = LibraryPlace(
        source=source,
        location=str(root),
        available=True,
        models=len(records),
        error=problems_text(walked.problems),
    )
    return records, place, walked.hf_caches


def _name(root: Path, source: LibrarySource, group: GgufGroup[LocalFile]) -> tuple[str, str | None]:
    stem = Path(group.key).name
    stem = stem[:-5] if stem.lower().endswith(".gguf") else stem
    if source is LibrarySource.LMSTUDIO:
        repo = _repo_of(root, Path(group.first.path).parent)
        if repo is not None:
            return f"{repo} {group.quantization or stem}", repo
    return stem, None


def _repo_of(root: Path, folder: Path) -> str | None:
    """LM Studio keeps models as <root>/<publisher>/<repo>/<files>."""
    try:
        parts = folder.relative_to(root).parts
    except ValueError:
        return None
    return f"{parts[0]}/{parts[1]}" if len(parts) >= 2 else None


def _identity(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path
