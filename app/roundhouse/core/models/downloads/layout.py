"""The Hugging Face cache layout a download writes into (blocking; callers use a thread).

    <hub cache>/models--org--name/blobs/<etag>                 the file's bytes
    <hub cache>/models--org--name/blobs/<etag>.incomplete      ours, while it downloads
    <hub cache>/models--org--name/snapshots/<commit>/<path>    -> ../../blobs/<etag>
    <hub cache>/models--org--name/refs/<revision>              the commit, no newline

That is what `huggingface_hub` writes, so `hf_hub_download(local_files_only=True)`,
`scan_cache_dir`, vLLM, mlx-lm and `llama-server -hf` find what Roundhouse downloaded.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from pathlib import Path

from huggingface_hub.file_download import repo_folder_name

from roundhouse.core.infra.transfer import writer
from roundhouse.core.infra.transfer.writer import PartialFile
from roundhouse.core.models.downloads.safety import (
    check_commit,
    check_repo_id,
    check_revision,
    contained,
    normalize_etag,
)
from roundhouse.core.models.downloads.words import HUB_WORDS

log = logging.getLogger(__name__)

PARTIAL_SUFFIX = ".incomplete"


class RepoCache:
    """One model repository's folder in a hub cache."""

    def __init__(self, hub_cache: Path, repo: str) -> None:
        self.hub_cache = hub_cache
        self.repo = check_repo_id(repo)
        self.root = hub_cache / repo_folder_name(repo_id=repo, repo_type="model")

    def blob(self, etag: str) -> Path:
        return self.root / "blobs" / normalize_etag(etag)

    def partial(self, etag: str) -> Path:
        """Named like huggingface_hub's leftovers, so `scan_cache_dir` counts it as an
        incomplete file, and a queue that lost its database still finds it."""
        return self.root / "blobs" / f"{normalize_etag(etag)}{PARTIAL_SUFFIX}"

    def snapshot_file(self, commit: str, path: str) -> Path:
        return contained(self.root / "snapshots" / check_commit(commit), path)

    def prepare(self) -> None:
        """Create blobs/ and snapshots/ (scan_cache_dir calls a repo folder without
        snapshots/ corrupt, and the folder exists as soon as a partial file does)."""
        (self.root / "blobs").mkdir(parents=True, exist_ok=True)
        (self.root / "snapshots").mkdir(parents=True, exist_ok=True)

    def cached_file(self, commit: str, path: str) -> Path | None:
        """The snapshot file when it is there and readable (a link to a present blob)."""
        target = self.snapshot_file(commit, path)
        return target if target.is_file() else None

    def link(self, commit: str, path: str, etag: str) -> Path:
        """Point snapshots/<commit>/<path> at the blob: a relative symlink (depth-aware), a
        hard link where symlinks are refused (Windows without developer mode), a copy where
        neither works. The snapshot file is returned."""
        blob = self.blob(etag)
        target = self.snapshot_file(commit, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        relative = os.path.relpath(blob, target.parent)
        if target.is_symlink() and str(target.readlink()) == relative:
            return target
        if target.is_symlink() or target.exists():
            target.unlink()
        try:
            target.symlink_to(relative)
            return target
        except OSError as exc:
            log.info("Cannot make a symlink at %s (%s); linking or copying instead", target, exc)
        try:
            os.link(blob, target)
            return target
        except OSError:
            pass
        temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            shutil.copyfile(blob, temporary)
            temporary.replace(target)
        finally:
            temporary.unlink(missing_ok=True)
        return target

    def write_ref(self, revision: str, commit: str) -> None:
        """refs/<revision> holds the commit (skipped when the revision is the commit)."""
        commit = check_commit(commit)
        if revision.lower() == commit:
            return
        ref = contained(self.root / "refs", check_revision(revision))
        if ref.is_file() and ref.read_text(encoding="utf-8") == commit:
            return
        ref.parent.mkdir(parents=True, exist_ok=True)
        # Written beside the repo's folders, not inside refs/, where readers take every
        # file for a ref; then renamed into place, so a reader never sees half of one.
        temporary = self.root / f".ref-{uuid.uuid4().hex[:8]}.tmp"
        try:
            temporary.write_text(commit, encoding="utf-8")
            temporary.replace(ref)
        finally:
            temporary.unlink(missing_ok=True)

    def install_blob(self, partial: Path, etag: str) -> Path:
        """Move a verified partial file to blobs/<etag> (atomic on one filesystem)."""
        blob = self.blob(etag)
        partial.replace(blob)
        return blob


def open_partial(path: Path, append: bool) -> PartialFile:
    """The partial file for writing at its end, with the shared writer's checks told in
    the downloads' words (the models folder, resume)."""
    return writer.open_partial(path, append, HUB_WORDS)


def remove_partial(path: Path) -> None:
    path.unlink(missing_ok=True)
