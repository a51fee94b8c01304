"""Install an official llama.cpp release build: plan it, download, verify, unpack, switch."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

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
from roundhouse.core.engines.install.download import download_file, fsync_file, parse_digest
from roundhouse.core.engines.install.errors import ChecksumError, InstallError
from roundhouse.core.engines.install.layout import INSTALL_RECORD
from roundhouse.core.engines.install.managed import ManagedBuilds
from roundhouse.core.engines.install.releases import fetch_release
from roundhouse.core.errors import ConflictError
from roundhouse.core.infra.threads import check, run_stoppable

# GitHub's asset downloads redirect to a CDN; a read stalled this long is retried.
DEFAULT_TIMEOUT = httpx.Timeout(30.0, read=60.0)


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
    client: httpx.AsyncClient | None = None,
    on_progress: ProgressCallback | None = None,
    make_current: bool = True,
    allow_unverified: bool = False,
    attempts: int = 3,
) -> InstalledBuild:
    """Install the planned build as `<engines_dir>/llama.cpp/<tag>/`; returns it.

    Files download into `.partial-<tag>/` beside it (a later call resumes them), are checked
    against the release's size and sha256, and are unpacked there; only then is the build
    renamed into place, in one step. Cancelling leaves only `.partial-<tag>/`. A release
    asset without a sha256 digest is refused unless `allow_unverified`. Pass a plan made by
    plan_llamacpp_install, never one a client sent: its URLs and digests are trusted.
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
        async with _client(client) as http:
            done_before = 0
            total = plan.choice.total_bytes
            for asset, digest in zip(files, digests, strict=True):
                await _download(http, asset, digest, partial, report, done_before, total, attempts)
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


async def _download(
    http: httpx.AsyncClient,
    asset: ReleaseAsset,
    digest: str | None,
    partial: Path,
    report: _Reporter,
    done_before: int,
    total: int,
    attempts: int,
) -> None:
    _check_file_name(asset.name)
    dest = partial / asset.name

    def progress(done: int, _size: int | None, rate: float | None) -> None:
        report(
            InstallStage.DOWNLOADING,
            f"Downloading {asset.name}",
            file=asset.name,
            done_bytes=done_before + done,
            total_bytes=total,
            rate_bps=rate,
        )

    report(
        InstallStage.DOWNLOADING,
        f"Downloading {asset.name}",
        file=asset.name,
        done_bytes=done_before,
        total_bytes=total,
    )
    try:
        await download_file(
            http,
            asset.url,
            dest,
            size=asset.size,
            sha256=digest,
            on_progress=progress,
            on_verifying=lambda: report(
                InstallStage.VERIFYING, f"Checking {asset.name}", file=asset.name
            ),
            attempts=attempts,
        )
    except ChecksumError:
        _remove_if_empty(partial)
        raise
    await asyncio.to_thread(fsync_file, dest)
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
