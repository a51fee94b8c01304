"""Hostile model caches: a link, a hard link or a FIFO planted where a partial file goes, and
cache folders other accounts can write. The download refuses in words, and the file a link
points at is never written (the real queue against the Hub stand-in, then a real daemon)."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from roundhouse.api.downloads import DownloadRequest, DownloadState
from roundhouse.core.models.downloads import UnsafeFolderError
from roundhouse.core.models.downloads.store import QUEUE_FILE
from tests.api.test_gateway_cli import roundhouse
from tests.daemon_process import DaemonProcess, running_daemon
from tests.fakes.hub import HubStandin, hub_env
from tests.fakes.hub.build import GGUF_REPO
from tests.support.standins import keyring_env
from tests.unit.models.test_downloads_server import (
    FakeHub,
    RepoFiles,
    Rig,
    fake_hub,
    payload,
    sha256,
    wait_bytes,
    wait_state,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX links and modes")

MiB = 1024 * 1024
DATA = payload(3 * MiB + 321)
REQUEST = DownloadRequest(repo="org/model", files=["model.gguf"])
# Bigger than what the first run keeps: the old resume cut a link's target back to that.
VICTIM = b"#!/bin/sh\n# the user's own file\n" + b"x" * (2 * MiB)


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with fake_hub() as server:
        server.add("org/model", RepoFiles({"model.gguf": DATA}, lfs={"model.gguf"}))
        yield server


@pytest.fixture
def rig(hub: FakeHub, home_root: Path) -> Rig:
    return Rig(hub, home_root)


def _partial(rig: Rig) -> Path:
    return rig.cache / "models--org--model" / "blobs" / f"{sha256(DATA)}.incomplete"


def _victim(root: Path) -> Path:
    victim = root / "victim" / ".bashrc"
    victim.parent.mkdir(parents=True)
    victim.write_bytes(VICTIM)
    return victim


def _plant(kind: str, partial: Path, victim: Path) -> None:
    partial.parent.mkdir(parents=True, exist_ok=True)
    partial.unlink(missing_ok=True)
    if kind == "symlink":
        partial.symlink_to(victim)
    elif kind == "hardlink":
        os.link(victim, partial)
    else:
        os.mkfifo(partial)


async def _failed_words(rig: Rig) -> str:
    service = rig.service()
    await service.start()
    try:
        (item,) = await service.add(REQUEST)
        failed = await wait_state(service, item.id, DownloadState.FAILED)
    finally:
        await service.close()
    return failed.error or ""


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo"])
def test_a_planted_partial_fails_the_download_and_its_target_is_untouched(
    rig: Rig, kind: str
) -> None:
    victim = _victim(rig.root)
    before = victim.stat()
    _plant(kind, _partial(rig), victim)
    words = asyncio.run(_failed_words(rig))
    assert str(_partial(rig)) in words and "Delete it" in words
    assert victim.read_bytes() == VICTIM and victim.stat().st_mtime_ns == before.st_mtime_ns
    assert not list((rig.cache / "models--org--model" / "snapshots").glob("*/model.gguf"))


def test_a_partial_swapped_for_a_link_between_runs_is_not_cut_back(rig: Rig) -> None:
    """The daemon stopped mid-download; before the next start the partial became a link to
    the user's file (bigger than what was kept). Resuming would have cut that file back to
    the kept size and appended the model to it."""
    rig.hub.faults.hold_at = MiB

    async def first() -> str:
        service = rig.service()
        await service.start()
        (item,) = await service.add(REQUEST)
        await wait_bytes(service, item.id, MiB)
        await service.close()
        return item.id

    item_id = asyncio.run(first())
    rig.hub.faults.hold_at = None
    victim = _victim(rig.root)
    _plant("symlink", _partial(rig), victim)

    async def second() -> str:
        service = rig.service()
        await service.start()
        try:
            failed = await wait_state(service, item_id, DownloadState.FAILED)
        finally:
            await service.close()
        return failed.error or ""

    assert "is a link" in asyncio.run(second())
    assert victim.read_bytes() == VICTIM


def test_a_world_writable_cache_is_refused_before_the_hub_is_asked(rig: Rig) -> None:
    rig.cache.mkdir(parents=True)
    rig.cache.chmod(0o777)

    async def body() -> None:
        service = rig.service()
        await service.start()
        try:
            with pytest.raises(UnsafeFolderError, match="every account") as caught:
                await service.add(REQUEST)
            assert f"chmod go-w '{rig.cache}'" in caught.value.detail
        finally:
            await service.close()

    asyncio.run(body())
    assert rig.hub.requests == [] and list(rig.cache.iterdir()) == []


def test_a_blobs_folder_opened_to_all_while_queued_fails_the_resume(rig: Rig) -> None:
    rig.hub.faults.hold_at = MiB

    async def first() -> str:
        service = rig.service()
        await service.start()
        (item,) = await service.add(REQUEST)
        await wait_bytes(service, item.id, MiB)
        await service.close()
        return item.id

    item_id = asyncio.run(first())
    rig.hub.faults.hold_at = None
    asked = len(rig.hub.requests)
    blobs = _partial(rig).parent
    blobs.chmod(0o777)

    async def second() -> str:
        service = rig.service()
        await service.start()
        try:
            failed = await wait_state(service, item_id, DownloadState.FAILED)
            with pytest.raises(UnsafeFolderError):
                await service.resume(item_id)  # still open to all: refused at once
        finally:
            await service.close()
        return failed.error or ""

    words = asyncio.run(second())
    assert f"into {blobs}:" in words and f"chmod go-w {shlex.quote(str(blobs))}" in words
    assert len(rig.hub.requests) == asked  # nothing fetched into it
    assert _partial(rig).stat().st_size == MiB
    assert (rig.data_dir / QUEUE_FILE).is_file()


@pytest.fixture(scope="module")
def shared_cache_daemon(
    fake_hub_session: HubStandin, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DaemonProcess, Path]]:
    folder = tmp_path_factory.mktemp("shared-cache")
    cache = folder / "shared hf cache"
    cache.mkdir()
    cache.chmod(0o777)
    env = {**keyring_env(folder), **hub_env(fake_hub_session), "HF_HUB_CACHE": str(cache)}
    with running_daemon(folder / "home", env=env) as process:
        yield process, cache


def test_the_refusal_reaches_the_cli_user_and_the_fix_it_names_works(
    shared_cache_daemon: tuple[DaemonProcess, Path],
) -> None:
    daemon, cache = shared_cache_daemon
    refused = roundhouse(daemon, "models", "pull", GGUF_REPO, "q8_0")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    said = " ".join((refused.stdout + refused.stderr).split())  # the table may wrap
    assert "every account on this computer may write to it" in said
    assert "chmod go-w" in said and "models_dir" in said
    assert "Traceback" not in refused.stderr
    assert list(cache.iterdir()) == []

    cache.chmod(0o755)  # what the words say to do
    done = roundhouse(daemon, "models", "pull", GGUF_REPO, "q8_0")
    assert done.returncode == 0, done.stdout + done.stderr
    queue = json.loads(roundhouse(daemon, "models", "downloads", "--json").stdout)
    assert [i["state"] for i in queue["items"]] == ["done"]
