"""Deleting a model's files with disk accounting, never outside the folder it was found in
(blocking; the service runs it in a thread). Plan first, so a dry run says what is freed."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from huggingface_hub import scan_cache_dir

from roundhouse.core.errors import InvalidInputError, NotFoundError
from roundhouse.core.models.library.records import HfRef, Record


class UnsafeDeleteError(InvalidInputError):
    title = "Cannot delete there"
    status = 409


@dataclass
class DeletePlan:
    freed: int
    removed: list[str]
    run: Callable[[], None]
    note: str | None = None
    prune_from: list[Path] = field(default_factory=list)  # folders emptied, removed up to root


def plan_delete(record: Record) -> DeletePlan:
    if record.root is None:
        raise NotFoundError(f"{record.model.name} has no files Roundhouse can delete.")
    if record.hf is not None:
        if record.hf.whole_revision:
            return _plan_revision(record.hf)
        return _plan_hf_files(record.hf, record.files)
    if record.folder is not None:
        return _plan_folder(record.root, record.folder)
    return _plan_files(record.root, record.files)


def execute(plan: DeletePlan, root: Path | None) -> None:
    plan.run()
    if root is not None:
        for folder in plan.prune_from:
            prune_empty(folder, root)


def _plan_revision(hf: HfRef) -> DeletePlan:
    strategy = scan_cache_dir(hf.cache).delete_revisions(hf.commit)
    paths = [*strategy.files, *strategy.repos, *strategy.snapshots, *strategy.refs]
    paths += strategy.blobs
    if not paths:
        raise NotFoundError("That revision is no longer in the Hugging Face cache.")
    for path in paths:
        _check_inside(path, hf.cache, lexical=True)
    removed = [str(p) for p in sorted({*strategy.repos, *strategy.snapshots})]
    return DeletePlan(strategy.expected_freed_size, removed, strategy.execute)


def _plan_hf_files(hf: HfRef, files: Iterable[Path]) -> DeletePlan:
    """Some files of a revision (one GGUF quantization): their snapshot links, and the blobs
    no other snapshot file of the repository points to."""
    snapshots = hf.repo_path / "snapshots"
    ours = {_absolute(f) for f in files}
    for link in ours:
        _check_inside(link, snapshots, lexical=True)
    others: set[Path] = set()
    for path in snapshots.rglob("*"):
        absolute = _absolute(path)
        if absolute not in ours and path.is_symlink():
            others.add(_first_hop(path))
    blobs: dict[Path, int] = {}
    freed = 0
    for link in ours:
        if link.is_symlink():
            blob = _first_hop(link)
            _check_inside(blob, hf.repo_path / "blobs", lexical=True)
            if blob not in others and blob.exists():
                blobs[blob] = blob.stat().st_size
        elif link.exists():
            freed += _own_bytes(link)  # a copy where links could not be made

    def run() -> None:
        for link in ours:
            link.unlink(missing_ok=True)
        for blob in blobs:
            blob.unlink(missing_ok=True)

    return DeletePlan(
        freed + sum(blobs.values()),
        sorted(str(p) for p in [*ours, *blobs]),
        run,
        prune_from=sorted({link.parent for link in ours}),
    )


def _plan_folder(root: Path, folder: Path) -> DeletePlan:
    """A safetensors model: the whole folder, when it is inside the root and not the root."""
    _check_inside(folder, root)
    if folder.resolve() == root.resolve():
        raise UnsafeDeleteError(
            f"The model's files are the library folder {root} itself: remove that folder "
            "from the library instead, or delete the files by hand."
        )
    if folder.is_symlink():
        return DeletePlan(0, [str(folder)], folder.unlink, "Only the link was removed.")
    freed = sum(_own_bytes(p) for p in folder.rglob("*") if not p.is_symlink() and p.is_file())
    return DeletePlan(
        freed, [str(folder)], lambda: shutil.rmtree(folder), prune_from=[folder.parent]
    )


def _plan_files(root: Path, files: Iterable[Path]) -> DeletePlan:
    """GGUF files (every shard). A link is removed, not what it points to."""
    freed = 0
    links = False
    chosen = list(files)
    for path in chosen:
        if path.is_symlink():
            _check_inside(path, root, lexical=True)
            links = True
        else:
            _check_inside(path, root)
            freed += _own_bytes(path) if path.exists() else 0

    def run() -> None:
        for path in chosen:
            path.unlink(missing_ok=True)

    note = "Links were removed; the files they point to are kept." if links else None
    parents = sorted({p.parent for p in chosen})
    return DeletePlan(freed, [str(p) for p in chosen], run, note, parents)


def prune_empty(folder: Path, root: Path) -> None:
    """Remove `folder` and its parents while empty, stopping at `root`."""
    stop = _absolute(root)
    current = _absolute(folder)
    while current != stop and current.is_relative_to(stop):
        try:
            current.rmdir()
        except OSError:
            return  # not empty (or not ours to remove): done
        current = current.parent


def _own_bytes(path: Path) -> int:
    """What removing the file frees: nothing while another hard link keeps it."""
    info = path.stat()
    return info.st_size if info.st_nlink <= 1 else 0


def _first_hop(link: Path) -> Path:
    """Where a link points, one hop only (as huggingface_hub's cache scan reads it)."""
    return _absolute(link.parent / link.readlink())


def _absolute(path: Path) -> Path:
    """Absolute and without `..`, links left as they are."""
    return Path(os.path.normpath(path.absolute()))


def _check_inside(path: Path, root: Path, *, lexical: bool = False) -> None:
    """Refuse a path outside `root`: resolved (links followed), or for a link itself, its
    folder resolved and its own name kept."""
    base = root.resolve()
    target = path.parent.resolve() / path.name if lexical else path.resolve()
    if target == base or not target.is_relative_to(base) or ".." in target.parts:
        raise UnsafeDeleteError(
            f"{path} is not inside {root}, where the model was found; Roundhouse deletes "
            "only inside its library folders. Delete it by hand if you mean to."
        )
