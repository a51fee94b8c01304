"""One queued file from start to finish: already cached? transfer, verify, install in the cache."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path, PurePosixPath

import aiohttp
from huggingface_hub.file_download import hf_hub_url

from roundhouse.core.infra.transfer.fetch import (
    Clock,
    Sleep,
    Transfer,
    TransferHooks,
    TransferPlan,
    TransferPolicy,
)
from roundhouse.core.infra.transfer.verify import Expected, check_finished
from roundhouse.core.infra.transfer.writer import Opener
from roundhouse.core.models.downloads.errors import QuarantinedError
from roundhouse.core.models.downloads.folders import check_cache_folders
from roundhouse.core.models.downloads.layout import RepoCache
from roundhouse.core.models.downloads.records import Entry
from roundhouse.core.models.downloads.words import HUB_WORDS


def label(entry: Entry) -> str:
    return f"{entry.repo}: {entry.path}"


def find_cached(entry: Entry) -> Path | None:
    """The snapshot file when the cache has it already, linked from a present blob if need
    be (a file another tool downloaded counts); refs/<revision> written. Blocking."""
    layout = RepoCache(Path(entry.cache_dir), entry.repo)
    found = layout.cached_file(entry.commit, entry.path)
    if found is None and layout.blob(entry.etag).is_file():
        found = layout.link(entry.commit, entry.path, entry.etag)
    if found is not None:
        layout.write_ref(entry.revision, entry.commit)
    return found


class ItemRun:
    """Runs one entry; returns the snapshot file, or raises (QuarantinedError, DownloadError,
    DiskFullError...). Cancelling it leaves the partial synced and its size recorded."""

    def __init__(
        self,
        entry: Entry,
        *,
        session: aiohttp.ClientSession,
        headers: dict[str, str],
        endpoint: str | None,
        hooks: TransferHooks,
        policy: TransferPolicy,
        opener: Opener,
        monotonic: Clock,
        sleep: Sleep,
        quarantine_dir: Path,
        on_verifying: Callable[[], Awaitable[None]],
    ) -> None:
        self.entry = entry
        self._layout = RepoCache(Path(entry.cache_dir), entry.repo)
        self._session = session
        self._headers = headers
        self._endpoint = endpoint
        self._hooks = hooks
        self._policy = policy
        self._opener = opener
        self._monotonic = monotonic
        self._sleep = sleep
        self._quarantine_dir = quarantine_dir
        self._on_verifying = on_verifying

    async def run(self) -> Path:
        await asyncio.to_thread(self._check_folders)
        cached = await asyncio.to_thread(find_cached, self.entry)
        if cached is not None:
            return cached
        entry = self.entry
        await asyncio.to_thread(self._layout.prepare)
        await asyncio.to_thread(self._check_folders)  # blobs/ and snapshots/ may be new
        partial = self._layout.partial(entry.etag)
        plan = TransferPlan(
            label=label(entry),
            url=hf_hub_url(entry.repo, entry.path, revision=entry.commit, endpoint=self._endpoint),
            partial=partial,
            size=entry.size,
            headers=self._headers,
            durable=entry.bytes_done,
            validator=entry.validator,
            words=HUB_WORDS,
        )
        await Transfer(
            self._session,
            plan,
            self._hooks,
            self._policy,
            opener=self._opener,
            monotonic=self._monotonic,
            sleep=self._sleep,
        ).run()
        await self._on_verifying()
        verdict = await check_finished(
            partial,
            Expected(size=entry.size, sha256=entry.sha256, git_oid=entry.git_oid),
            quarantine_dir=self._quarantine_dir,
            name=f"{entry.id}-{PurePosixPath(entry.path).name}",
            source="the Hub",
            words=HUB_WORDS,
        )
        if not verdict.ok:
            moved = verdict.moved_to
            assert moved is not None, "a quarantine folder was given"
            raise QuarantinedError(
                f"{label(entry)} does not match the Hub: {verdict.reason}. It was moved to "
                f"{moved} (not deleted) for you to inspect or remove; resume to download it "
                "again.",
                moved,
            )
        return await asyncio.to_thread(self._install, partial)

    def _check_folders(self) -> None:
        check_cache_folders(self._layout.hub_cache, self._layout.root)

    def _install(self, partial: Path) -> Path:
        entry = self.entry
        self._layout.install_blob(partial, entry.etag)
        target = self._layout.link(entry.commit, entry.path, entry.etag)
        self._layout.write_ref(entry.revision, entry.commit)
        return target
