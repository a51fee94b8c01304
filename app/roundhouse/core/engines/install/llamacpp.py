"""Install an official llama.cpp release build: plan it, download, verify, unpack, switch."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import httpx

from roundhouse import __version__
from roundhouse.api.engines import EngineId
from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.installs import (
    Backend,
    InstalledBuild,
    InstallPlan,
    InstallProgress,
    InstallStage,
    ProgressCallback,
    ReleaseAsset,
)
from roundhouse.core.engines.install.archive import extract_archive
from roundhouse.core.engines.install.assets import choose_asset
from roundhouse.core.engines.install.errors import ChecksumError, InstallError
from roundhouse.core.engines.install.layout import INSTALL_RECORD, RPC_SERVER_NAMES
from roundhouse.core.engines.install.managed import ManagedBuilds
from roundhouse.core.engines.install.releases import fetch_release
from roundhouse.core.engines.install.words import RELEASE_WORDS
from roundhouse.core.errors import ConflictError
from roundhouse.core.infra.threads import check, run_stoppable
from roundhouse.core.infra.transfer.fetch import Transfer, TransferPlan, TransferPolicy, new_session
from roundhouse.core.infra.transfer.rate import RollingRate
from roundhouse.core.infra.transfer.verify import Expected, check_finished
from roundhouse.core.infra.transfer.writer import partial_size

# The release listing (GitHub's API) is read with httpx, as the other small JSON calls are.
DEFAULT_TIMEOUT = httpx.Timeout(30.0, read=60.0)
# GitHub's asset downloads redirect to a CDN; a read stalled this long is retried.
STALL_TIMEOUT_S = 60.0
_DIGEST = re.compile(r"^sha256[:-]([0-9a-fA-F]{64})$")


async def plan_llamacpp_install(
    inventory: HardwareInventory,
    *,
    tag: str | None = None,
    prefer: Backend | None = None,
    releases_url: str | None = None,
    client: httpx.AsyncClient | None = None,
) -> InstallPlan:
    """The release (latest, or `tag`) and the build for this machine, with the reason."""
    async with _client(client) as http:
        release = await fetch_release(http, tag, base_url=releases_url)
    choice = choose_asset(
        release.assets,
        system=inventory.os,
        machine=inventory.cpu.arch,
        gpus=inventory.gpus,
        prefer=prefer,
    )
    return InstallPlan(release=release, choice=choice)


async def install_llamacpp(
    engines_dir: Path,
    plan: InstallPlan,
    *,
    session: aiohttp.ClientSession | None = None,
    on_progress: ProgressCallback | None = None,
    make_current: bool = True,
    allow_unverified: bool = False,
    attempts: int = 3,
) -> InstalledBuild:
    """Install the planned build as `<engines_dir>/llama.cpp/<tag>/`; returns it.

    Files download into `.partial-<tag>/` beside it through the shared transfer engine (a
    later call resumes them), are checked against the release's size and sha256, and are
    unpacked there; only then is the build renamed into place, in one step. Cancelling
    leaves only `.partial-<tag>/`. A release asset without a sha256 digest is refused unless
    `allow_unverified`. Pass a plan made by plan_llamacpp_install, never one a client sent:
    its URLs and digests are trusted.
    """
    builds = ManagedBuilds(engines_dir)
    tag = plan.tag
    report = _Reporter(on_progress)
    with builds.lock():
        if tag in builds.tags():
            build = builds.switch(tag) if make_current else builds.get(tag)
            report(InstallStage.DONE, f"llama.cpp {tag} is already installed.")
            return build
        files = [plan.choice.asset, *plan.choice.extras]
        digests = [_digest(a, allow_unverified) for a in files]
        partial = builds.partial_dir(tag)
        await asyncio.to_thread(builds.clean_trash)
        policy = TransferPolicy(stall_timeout_s=STALL_TIMEOUT_S, attempts=max(1, attempts))
        async with _session(session) as http:
            done_before = 0
            total = plan.choice.total_bytes
            for asset, digest in zip(files, digests, strict=True):
                await _download(http, asset, digest, partial, report, done_before, total, policy)
                done_before += asset.size
        report(InstallStage.EXTRACTING, f"Unpacking {plan.choice.asset.name}")
        tree = await run_stoppable(lambda stop: _unpack(builds, partial, files, stop))
        _write_record(tree, plan)
        report(InstallStage.INSTALLING, f"Installing llama.cpp {tag}")
        target = builds.version_dir(tag)
        # A folder without llama-server (a build someone emptied) is in the way: set it aside.
        await asyncio.to_thread(builds.set_aside, tag)
        try:
            # One rename: detection sees no build, then the whole build.
            tree.rename(target)
        except OSError as exc:
            raise ConflictError(
                f"Cannot move llama.cpp {tag} into place ({exc.strerror}); "
                "is another copy being installed? Try again."
            ) from exc
        await asyncio.to_thread(shutil.rmtree, partial, True)
        await asyncio.to_thread(builds.clean_trash)
        build = builds.switch(tag) if make_current else builds.get(tag)
    report(InstallStage.DONE, f"llama.cpp {tag} is installed: {plan.choice.reason}")
    return build


class _Reporter:
    def __init__(self, on_progress: ProgressCallback | None) -> None:
        self.on_progress = on_progress

    def __call__(self, stage: InstallStage, message: str, **fields: object) -> None:
        if self.on_progress is not None:
            self.on_progress(
                InstallProgress.model_validate(
                    {"engine": EngineId.LLAMA_CPP, "stage": stage, "message": message, **fields}
                )
            )


class _AssetHooks:
    """The transfer's reports as install progress: this file's bytes after those before it,
    at the rate the shared meter measures."""

    def __init__(self, asset: ReleaseAsset, report: _Reporter, done_before: int, total: int):
        self._asset = asset
        self._report = report
        self._done_before = done_before
        self._total = total
        self._rate = RollingRate()

    def attempt_started(self, offset: int) -> None:
        self._rate.reset(time.monotonic(), offset)

    def received(self, received: int) -> None:
        pass

    def progress(self, received: int) -> None:
        now = time.monotonic()
        self._rate.add(now, received)
        name = self._asset.name
        self._report(
            InstallStage.DOWNLOADING,
            f"Downloading {name}",
            file=name,
            done_bytes=self._done_before + received,
            total_bytes=self._total,
            rate_bps=self._rate.speed(now) if self._rate.measuring else None,
        )

    async def checkpoint(self, durable: int, validator: str | None) -> None:
        pass  # the partial file's size is the record: a later install resumes from it

    def retrying(self, reason: str, delay_s: float) -> None:
        pass


async def _download(
    session: aiohttp.ClientSession,
    asset: ReleaseAsset,
    digest: str | None,
    partial: Path,
    report: _Reporter,
    done_before: int,
    total: int,
    policy: TransferPolicy,
) -> None:
    _check_file_name(asset.name)
    dest = partial / asset.name
    await asyncio.to_thread(lambda: partial.mkdir(parents=True, exist_ok=True))
    report(
        InstallStage.DOWNLOADING,
        f"Downloading {asset.name}",
        file=asset.name,
        done_bytes=done_before,
        total_bytes=total,
    )
    plan = TransferPlan(
        label=asset.name,
        url=asset.url,
        partial=dest,
        size=asset.size,
        headers={"User-Agent": f"Roundhouse/{__version__}"},
        durable=await asyncio.to_thread(partial_size, dest),  # what an earlier install left
        words=RELEASE_WORDS,
    )
    hooks = _AssetHooks(asset, report, done_before, total)
    try:
        await Transfer(session, plan, hooks, policy, monotonic=time.monotonic).run()
        report(InstallStage.VERIFYING, f"Checking {asset.name}", file=asset.name)
        # A bad file is deleted, not set aside: a release asset is fetched again whole.
        verdict = await check_finished(
            dest,
            Expected(size=asset.size, sha256=digest),
            quarantine_dir=None,
            source="the release",
            words=RELEASE_WORDS,
        )
        if not verdict.ok:
            raise RELEASE_WORDS.mismatch(asset.name, asset.size, verdict)
    except ChecksumError:
        await asyncio.to_thread(dest.unlink, True)  # nothing of a wrong file is kept
        _remove_if_empty(partial)
        raise
    verified = "size and sha256 match" if digest else "size matches; no sha256 to check"
    report(
        InstallStage.VERIFYING,
        f"{asset.name}: {verified}",
        file=asset.name,
        done_bytes=done_before + asset.size,
        total_bytes=total,
    )


def _unpack(
    builds: ManagedBuilds, partial: Path, files: list[ReleaseAsset], stop: threading.Event
) -> Path:
    """Unpack into a fresh folder under `partial`; returns the folder holding llama-server."""
    for old in partial.glob("tree-*"):
        shutil.rmtree(old, ignore_errors=True)
    tree = partial / f"tree-{uuid.uuid4().hex[:8]}"
    main, *extras = files
    extract_archive(partial / main.name, tree, stop=stop)
    check(stop)
    exe = _find_executable(tree, builds.executable)
    if exe is None:
        raise InstallError(
            f"{main.name} holds no {builds.executable}; it is not a llama.cpp server build. "
            "Choose another build."
        )
    # The libraries sit beside llama-server (rpath $ORIGIN); the CUDA runtime goes there too.
    for extra in extras:
        extract_archive(partial / extra.name, exe.parent, stop=stop)
    if sys.platform != "win32":
        exe.chmod(0o755)
        # The release archives ship the RPC worker beside the server (the split, ADR 36).
        for name in RPC_SERVER_NAMES:
            worker = exe.parent / name
            if worker.is_file():
                worker.chmod(0o755)
    return exe.parent


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()


def _find_executable(tree: Path, name: str) -> Path | None:
    found = [p for p in tree.rglob(name) if p.is_file() and not p.is_symlink()]
    return min(found, key=lambda p: len(p.parts)) if found else None


def _write_record(folder: Path, plan: InstallPlan) -> None:
    record = {
        "tag": plan.tag,
        "asset": plan.choice.asset.name,
        "extras": [a.name for a in plan.choice.extras],
        "digest": plan.choice.asset.digest,
        "backend": plan.choice.backend.value,
        "backend_version": plan.choice.backend_version,
        "reason": plan.choice.reason,
        "release_url": plan.release.html_url,
        "installed_at": time.time(),
    }
    (folder / INSTALL_RECORD).write_text(json.dumps(record, indent=2), encoding="utf-8")


def parse_digest(digest: str) -> str:
    """The hex of a "sha256:<hex>" digest; InstallError for anything else."""
    found = _DIGEST.match(digest.strip())
    if not found:
        raise InstallError(
            f"The release lists the digest {digest!r}, which is not a sha256; "
            "Roundhouse cannot verify this file."
        )
    return found.group(1).lower()


def _digest(asset: ReleaseAsset, allow_unverified: bool) -> str | None:
    if asset.digest:
        return parse_digest(asset.digest)
    if allow_unverified:
        return None
    raise InstallError(
        f"The release lists no sha256 for {asset.name}, so Roundhouse cannot verify it. "
        "Choose a newer release, or allow unverified downloads."
    )


def _check_file_name(name: str) -> None:
    if not name or name in (".", "..") or any(c in name for c in "/\\:\x00"):
        raise InstallError(f"The release names a file {name!r}; refusing to write it.")


@contextlib.asynccontextmanager
async def _client(client: httpx.AsyncClient | None) -> AsyncIterator[httpx.AsyncClient]:
    if client is not None:
        yield client
        return
    async with httpx.AsyncClient(timeout=DEFAULT_TIMEOUT, follow_redirects=True) as http:
        yield http


@contextlib.asynccontextmanager
async def _session(
    session: aiohttp.ClientSession | None,
) -> AsyncIterator[aiohttp.ClientSession]:
    if session is not None:
        yield session
        return
    async with new_session() as http:
        yield http
