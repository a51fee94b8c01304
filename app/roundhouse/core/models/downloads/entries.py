"""Making queue entries from resolved files, and finding the one a file already has."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from roundhouse.api.downloads import DownloadState
from roundhouse.core.infra.transfer.writer import partial_size
from roundhouse.core.models.downloads.layout import RepoCache
from roundhouse.core.models.downloads.records import Entry
from roundhouse.core.models.downloads.resolve import RemoteFile, ResolvedRepo
from roundhouse.core.models.downloads.runner import find_cached
from roundhouse.core.models.downloads.views import Live


def partial_path(entry: Entry) -> Path:
    return RepoCache(Path(entry.cache_dir), entry.repo).partial(entry.etag)


def known_entry(
    lives: Iterable[Live], cache_dir: str, resolved: ResolvedRepo, remote: RemoteFile
) -> Live | None:
    """The newest entry for this very file (same cache, repo, commit and path), unless it is
    done: a done file is looked up in the cache again, and added anew if it went."""
    key = (cache_dir, resolved.repo, resolved.commit, remote.path)
    for live in sorted(lives, key=lambda live: -live.entry.seq):
        if live.entry.file_key == key:
            return None if live.entry.state == DownloadState.DONE else live
    return None


def new_entry(
    item_id: str, cache_dir: str, resolved: ResolvedRepo, remote: RemoteFile, now: float
) -> Entry:
    """A queued entry, or a done one when the cache has the file already (blocking: it
    looks at the disk). A partial file found in place (a queue that lost its database left
    it) is continued from; the digest check at the end covers what it holds."""
    entry = Entry(
        id=item_id,
        seq=0,  # given when admitted
        cache_dir=cache_dir,
        repo=resolved.repo,
        revision=resolved.revision,
        commit=resolved.commit,
        path=remote.path,
        size=remote.size,
        etag=remote.etag,
        sha256=remote.sha256,
        git_oid=remote.git_oid,
        state=DownloadState.QUEUED,
        bytes_done=0,
        validator=None,
        error=None,
        local_path=None,
        quarantine_path=None,
        created_at=now,
        updated_at=now,
    )
    cached = find_cached(entry)
    if cached is not None:
        entry.state = DownloadState.DONE
        entry.bytes_done = entry.size
        entry.local_path = str(cached)
    else:
        entry.bytes_done = min(entry.size, partial_size(partial_path(entry)))
    return entry
