"""Models in a Hugging Face cache: each GGUF quantization of each cached revision is an entry,
and a revision's safetensors or MLX weights are one (huggingface_hub's scan_cache_dir)."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import CachedRevisionInfo, CacheNotFound, scan_cache_dir

from roundhouse.api.library import LibraryPlace, LibrarySource
from roundhouse.core.models.hub.quants import GgufGroup, group_gguf_files
from roundhouse.core.models.library.records import (
    FactsReader,
    HfRef,
    Record,
    gguf_records,
    model_dir_record,
)
from roundhouse.core.models.library.walk import LocalFile, ModelDir, is_utf8, problems_text, shown

SOURCE = LibrarySource.HF_CACHE


def scan_hf_cache(
    cache: Path, facts: FactsReader, *, apple_silicon: bool = False
) -> tuple[list[Record], LibraryPlace]:
    try:
        info = scan_cache_dir(cache)
    except CacheNotFound:
        place = LibraryPlace(
            source=SOURCE, location=str(cache), available=False, error="No models downloaded yet."
        )
        return [], place
    except OSError as exc:
        place = LibraryPlace(source=SOURCE, location=str(cache), available=False, error=str(exc))
        return [], place
    records: list[Record] = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id.lower()):
        if repo.repo_type != "model" or not is_utf8(str(repo.repo_path)):
            continue
        revisions = sorted(repo.revisions, key=lambda r: (not r.refs, -r.last_modified))
        for revision in revisions:
            records += _revision_records(
                cache, repo.repo_path, repo.repo_id, revision, facts, apple_silicon
            )
    problems = [shown(str(w)).splitlines()[0] for w in info.warnings]
    place = LibraryPlace(
        source=SOURCE,
        location=str(cache),
        available=True,
        models=len(records),
        error=problems_text(problems),
    )
    return records, place


def _revision_records(
    cache: Path,
    repo_path: Path,
    repo_id: str,
    revision: CachedRevisionInfo,
    facts: FactsReader,
    apple_silicon: bool,
) -> list[Record]:
    snapshot = revision.snapshot_path
    files = [
        LocalFile(str(f.file_path), f.size_on_disk, int(f.blob_last_modified * 1e9))
        for f in revision.files
        if is_utf8(str(f.file_path))  # others cannot travel in the API's JSON
    ]
    ggufs = [f for f in files if f.path.lower().endswith(".gguf")]
    models = [g for g in group_gguf_files(ggufs) if not g.projector]
    weights = sorted(
        (f for f in files if Path(f.path).parent == snapshot and f.path.endswith(".safetensors")),
        key=lambda f: f.path,
    )
    config = next((f for f in files if Path(f.path) == snapshot / "config.json"), None)
    has_weights = bool(weights) and config is not None
    hf = HfRef(cache, repo_path, revision.commit_hash, len(models) + has_weights == 1)
    refs = sorted(revision.refs)
    suffix = "" if refs else f" @{revision.commit_hash[:7]}"

    def namer(group: GgufGroup[LocalFile]) -> tuple[str, str | None]:
        return f"{repo_id} {group.name}{suffix}", repo_id

    records = gguf_records(
        ggufs, SOURCE, cache, facts, namer, apple_silicon=apple_silicon, hf=hf, refs=refs
    )
    if has_weights and config is not None:
        folder = ModelDir(snapshot, weights, config)
        records.append(
            model_dir_record(
                folder,
                SOURCE,
                cache,
                facts,
                f"{repo_id}{suffix}",
                repo_id,
                apple_silicon=apple_silicon,
                hf=hf,
                refs=refs,
            )
        )
    return records
