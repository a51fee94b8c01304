"""Library entries built from the files found, with where they live for a later delete."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from roundhouse.api.engines import ModelFormat
from roundhouse.api.library import LibraryModel, LibrarySource
from roundhouse.core.engines.projector import pick_projector
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.models.hub.quants import GgufGroup, group_gguf_files
from roundhouse.core.models.library.engines import engines_for
from roundhouse.core.models.library.facts import FactsCache, GgufProbe, ModelFacts, Stamp
from roundhouse.core.models.library.safetensors_meta import model_dir_facts
from roundhouse.core.models.library.walk import LocalFile, ModelDir

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HfRef:
    """Where an entry sits in a Hugging Face cache."""

    cache: Path  # the hub cache folder
    repo_path: Path  # <cache>/models--org--name
    commit: str
    whole_revision: bool  # the entry is every model file of the revision


@dataclass(frozen=True)
class Record:
    model: LibraryModel
    root: Path | None  # the place it was found in; deletes stay inside it
    files: tuple[Path, ...] = ()  # the files that make it (snapshot links, in an HF cache)
    folder: Path | None = None  # a safetensors model's folder
    hf: HfRef | None = None


def stable_id(source: LibrarySource, key: str) -> str:
    """Short, URL-safe, and the same on every scan while the files stay where they are."""
    digest = hashlib.sha256(f"{source.value}\0{key}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


class FactsReader:
    """Facts of files through the cache; what it reads is remembered for `cache.keep_only`,
    and GGUF files known only from the quick probe are collected in `unchecked`."""

    def __init__(self, cache: FactsCache, probe: GgufProbe | None) -> None:
        self.cache = cache
        self.probe = probe
        self.seen: set[str] = set()
        self.unchecked: list[Unchecked] = []

    def gguf(self, file: LocalFile) -> ModelFacts:
        key = f"gguf:{file.path}"
        self.seen.add(key)
        stamp = (file.stamp,)
        facts = self.cache.get(key, stamp)
        if facts is None:
            facts = probe_safely(self.probe, Path(file.path))
            self.cache.put(key, stamp, facts)
        if not facts.checked:
            self.unchecked.append(Unchecked(key, stamp, Path(file.path)))
        return facts

    def model_dir(self, folder: ModelDir, repo: str | None) -> ModelFacts:
        key = f"dir:{folder.path}"
        self.seen.add(key)
        stamp = tuple(f.stamp for f in (folder.config, *folder.weights))
        cached = self.cache.get(key, stamp)
        if cached is not None:
            return cached
        facts = model_dir_facts(folder, repo)
        self.cache.put(key, stamp, facts)
        return facts


@dataclass(frozen=True)
class Unchecked:
    """A GGUF file whose whole header is still to be read, and the cache entry it updates."""

    key: str
    stamp: Stamp
    path: Path


def probe_safely(probe: GgufProbe | None, path: Path) -> ModelFacts:
    """The probe's facts, or the reason it failed as the entry's error: a list goes on."""
    if probe is None:
        return ModelFacts()
    try:
        return probe(path)
    except (RoundhouseError, OSError, ValueError) as exc:
        return ModelFacts(error=getattr(exc, "detail", None) or str(exc) or type(exc).__name__)
    except Exception as exc:  # one hostile file must not stop the listing: logged, listed
        log.warning("Reading the GGUF header of %s failed", path, exc_info=True)
        return ModelFacts(error=f"The file cannot be read as GGUF ({type(exc).__name__}).")


# (group) -> (display name, repo id or None)
Namer = Callable[[GgufGroup[LocalFile]], tuple[str, str | None]]


def gguf_records(
    files: Sequence[LocalFile],
    source: LibrarySource,
    root: Path,
    facts: FactsReader,
    namer: Namer,
    *,
    apple_silicon: bool = False,
    hf: HfRef | None = None,
    refs: Sequence[str] = (),
) -> list[Record]:
    """One entry per GGUF model (a split one counted once), a projector beside it attached."""
    groups = group_gguf_files(files)
    # Per folder, its projectors; the one paired is the one llama-server is given (F16 first).
    projectors: dict[str, list[Path]] = {}
    for group in groups:
        if group.projector:
            path = Path(group.first.path)
            projectors.setdefault(str(path.parent), []).append(path)
    records = []
    for group in groups:
        if group.projector:
            continue
        first = facts.gguf(group.first)
        counts = [first.parameter_count] + [facts.gguf(f).parameter_count for f in group.files[1:]]
        name, repo = namer(group)
        error = first.error
        if not group.complete:
            have = len(group.files)
            error = error or (
                f"Only {have} of its {group.shards} parts {'is' if have == 1 else 'are'} here: "
                "download the missing ones."
            )
        key = group.key if hf is None else f"{hf.commit}:{group.key}"
        model = LibraryModel(
            id=stable_id(source, key),
            name=name,
            source=source,
            format=ModelFormat.GGUF,
            path=group.first.path,
            paths=[f.path for f in group.files],
            projector=_paired(projectors.get(str(Path(group.first.path).parent), [])),
            repo=repo,
            revision=hf.commit if hf is not None else None,
            refs=list(refs),
            architecture=first.architecture,
            parameter_count=_total(counts) if group.complete else None,
            parameter_label=first.parameter_label,
            quantization=first.quantization or group.quantization,
            context_length=first.context_length,
            size_bytes=group.size,
            engines=engines_for(ModelFormat.GGUF, first.architecture, apple_silicon),
            modified=_when(max(f.mtime_ns for f in group.files)),
            error=error,
        )
        files_ = tuple(Path(f.path) for f in group.files)
        records.append(Record(model, root, files_, hf=hf))
    return records


def model_dir_record(
    folder: ModelDir,
    source: LibrarySource,
    root: Path,
    facts: FactsReader,
    name: str,
    repo: str | None,
    *,
    apple_silicon: bool = False,
    hf: HfRef | None = None,
    refs: Sequence[str] = (),
) -> Record:
    found = facts.model_dir(folder, repo)
    fmt = ModelFormat.MLX if found.mlx else ModelFormat.SAFETENSORS
    key = str(folder.path) if hf is None else f"{hf.commit}:safetensors"
    all_files = (folder.config, *folder.weights)
    model = LibraryModel(
        id=stable_id(source, key),
        name=name,
        source=source,
        format=fmt,
        path=str(folder.path),
        paths=[f.path for f in folder.weights],
        repo=repo,
        revision=hf.commit if hf is not None else None,
        refs=list(refs),
        architecture=found.architecture,
        parameter_count=found.parameter_count,
        quantization=found.quantization,
        context_length=found.context_length,
        size_bytes=sum(f.size for f in folder.weights),
        engines=engines_for(fmt, found.architecture, apple_silicon),
        modified=_when(max(f.mtime_ns for f in all_files)),
        error=found.error,
    )
    return Record(model, root, tuple(Path(f.path) for f in folder.weights), folder.path, hf)


def _total(counts: Sequence[int | None]) -> int | None:
    """Parameters of all parts, when every part says (each part holds its own tensors)."""
    return sum(c for c in counts if c) if all(counts) else None


def _when(mtime_ns: int) -> datetime | None:
    try:
        return datetime.fromtimestamp(mtime_ns / 1e9, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _paired(projectors: Sequence[Path]) -> str | None:
    chosen = pick_projector(projectors)
    return str(chosen) if chosen is not None else None
