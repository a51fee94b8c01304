"""Downloads when things go wrong: a corrupted byte, a full disk, stalls, a server that ignores
Range, a redirect to another host, hostile names from the server."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Iterator
from pathlib import Path

import pytest

from roundhouse.api.downloads import DownloadRequest, DownloadState
from roundhouse.api.settings import ModelsSettings
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.infra.transfer.writer import PartialFile
from roundhouse.core.models.downloads import UnsafeNameError
from roundhouse.core.models.downloads.layout import open_partial
from tests.unit.models.test_downloads_server import (
    COMMIT,
    FakeHub,
    RepoFiles,
    Rig,
    fake_hub,
    payload,
    sha256,
    wait_bytes,
    wait_state,
)

MiB = 1024 * 1024
DATA = payload(3 * MiB + 777)
BLOB = sha256(DATA)


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with fake_hub() as server:
        server.add("org/model", RepoFiles({"model.gguf": DATA}, lfs={"model.gguf"}))
        yield server


@pytest.fixture
def rig(hub: FakeHub, home_root: Path) -> Rig:
    return Rig(hub, home_root)


def partial(rig: Rig) -> Path:
    return rig.cache / "models--org--model" / "blobs" / f"{BLOB}.incomplete"


REQUEST = DownloadRequest(repo="org/model", files=["model.gguf"])


def test_a_corrupted_byte_is_quarantined_not_deleted(rig: Rig) -> None:
    rig.hub.faults.flip_byte_at = 2 * MiB + 5

    async def body() -> None:
        service = rig.service()
        await service.start()
        (item,) = await service.add(REQUEST)
        bad = await wait_state(service, item.id, DownloadState.QUARANTINED)
        assert bad.quarantine_path is not None and bad.error is not None
        moved = Path(bad.quarantine_path)
        assert moved.parent == rig.data_dir / "quarantine"
        assert moved.name == f"{item.id}-model.gguf"
        assert await asyncio.to_thread(moved.read_bytes) != DATA
        assert "does not match" in bad.error and str(moved) in bad.error
        assert not partial(rig).exists()
        assert not (rig.cache / "models--org--model" / "blobs" / BLOB).exists()
        assert not (rig.cache / "models--org--model" / "snapshots" / COMMIT / "model.gguf").exists()
        # Downloaded again from the start; the quarantined copy stays.
        rig.hub.faults.flip_byte_at = None
        await service.resume(item.id)
        done = await wait_state(service, item.id, DownloadState.DONE)
        assert done.quarantine_path is None
        assert await asyncio.to_thread(moved.is_file)
        await service.close()

    asyncio.run(body())
    assert "range" not in rig.hub.file_gets()[-1].headers


class _FullDisk:
    """Writes fail with ENOSPC once `limit` bytes are in the file, until `freed` is set;
    the write that crosses the limit writes what fits (as a real disk would)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.freed = False
        self.failures = 0

    def open(self, path: Path, append: bool) -> PartialFile:
        disk = self
        handle = open_partial(path, append)

        class Handle:
            def write(self, data: bytes | bytearray | memoryview) -> int | None:
                have = path.stat().st_size
                room = len(data) if disk.freed else max(0, disk.limit - have)
                if room == 0:
                    disk.failures += 1
                    raise OSError(errno.ENOSPC, "No space left on device")
                return handle.write(memoryview(data)[:room])

            def fileno(self) -> int:
                return handle.fileno()

            def close(self) -> None:
                handle.close()

        return Handle()


def test_a_full_disk_fails_clearly_keeps_the_partial_and_resumes(rig: Rig) -> None:
    disk = _FullDisk(limit=MiB + 100)

    async def body() -> None:
        service = rig.service(opener=disk.open)
        await service.start()
        (item,) = await service.add(REQUEST)
        failed = await wait_state(service, item.id, DownloadState.FAILED)
        assert disk.failures >= 1
        assert failed.error is not None
        assert "is full: free" in failed.error and "GB and resume" in failed.error
        assert "kept" in failed.error
        assert partial(rig).stat().st_size == MiB + 100  # kept, as far as it got
        assert failed.bytes_done == MiB + 100
        assert service.view().totals.active == 0
        disk.freed = True
        await service.resume(item.id)
        done = await wait_state(service, item.id, DownloadState.DONE)
        assert await asyncio.to_thread(Path(str(done.local_path)).read_bytes) == DATA
        await service.close()

    asyncio.run(body())
    assert rig.hub.file_gets()[-1].headers["range"] == f"bytes={MiB + 100}-"


def test_a_stall_is_retried_after_a_backoff_and_finishes(rig: Rig) -> None:
    rig.settings = ModelsSettings(stall_timeout_s=0.3)
    rig.hub.faults.hold_at = MiB // 2
    rig.hub.faults.hold_times = 1

    async def body() -> None:
        service = rig.service()
        await service.start()
        (item,) = await service.add(REQUEST)
        await wait_state(service, item.id, DownloadState.DONE)
        await service.close()

    asyncio.run(body())
    assert rig.sleeps == [1.0]
    first, second = rig.hub.file_gets()
    assert "range" not in first.headers
    assert second.headers["range"] == f"bytes={MiB // 2}-"


def test_stalls_in_a_row_fail_with_backoff_and_keep_the_partial(rig: Rig) -> None:
    rig.settings = ModelsSettings(stall_timeout_s=0.2, download_attempts=3)
    rig.hub.faults.hold_at = MiB

    async def body() -> None:
        service = rig.service()
        await service.start()
        (item,) = await service.add(REQUEST)
        stalled = await wait_bytes(service, item.id, MiB)
        assert stalled.state == DownloadState.DOWNLOADING
        failed = await wait_state(service, item.id, DownloadState.FAILED)
        assert failed.error is not None and "no data arrived for 0.2 s, 3 times" in failed.error
        assert "kept" in failed.error
        assert failed.eta_s is None and not failed.stalled
        await service.close()

    asyncio.run(body())
    assert rig.sleeps == [1.0, 2.0]
    assert partial(rig).stat().st_size == MiB


def test_a_whole_file_answer_to_a_range_request_restarts_cleanly(rig: Rig) -> None:
    rig.hub.faults.hold_at = MiB

    async def body() -> None:
        service = rig.service()
        await service.start()
        (item,) = await service.add(REQUEST)
        await wait_bytes(service, item.id, MiB)
        await service.pause(item.id)
        rig.hub.faults.hold_at = None
        rig.hub.faults.ignore_range = True
        await service.resume(item.id)
        done = await wait_state(service, item.id, DownloadState.DONE)
        assert await asyncio.to_thread(Path(str(done.local_path)).read_bytes) == DATA
        await service.close()

    asyncio.run(body())
    assert rig.hub.file_gets()[-1].headers["range"] == f"bytes={MiB}-"


def test_a_redirect_to_another_host_drops_the_token(rig: Rig) -> None:
    rig.hub.faults.redirect = True
    rig.token = "hf_secret_token"

    async def body() -> None:
        service = rig.service()
        await service.start()
        (item,) = await service.add(REQUEST)
        done = await wait_state(service, item.id, DownloadState.DONE)
        assert await asyncio.to_thread(Path(str(done.local_path)).read_bytes) == DATA
        await service.close()

    asyncio.run(body())
    hub_gets = [r for r in rig.hub.requests if r.server == "hub" and "/resolve/" in r.path]
    cdn_gets = [r for r in rig.hub.requests if r.server == "cdn"]
    assert hub_gets and cdn_gets
    assert all(r.headers["authorization"] == "Bearer hf_secret_token" for r in hub_gets)
    assert all("authorization" not in r.headers for r in cdn_gets)


def test_hostile_names_from_the_server_are_refused(rig: Rig) -> None:
    outside = rig.root / "evil"
    rig.hub.add("org/traversal", RepoFiles({"ok.json": b"{}"}, tree_extra=["../../evil"]))
    rig.hub.add("org/unc", RepoFiles({"ok.json": b"{}"}, tree_extra=["\\\\server\\share\\x"]))
    rig.hub.add("org/drive", RepoFiles({"ok.json": b"{}"}, tree_extra=["C:evil"]))
    rig.hub.add("org/etag", RepoFiles({"ok.json": b"{}"}, etag_override="../../../evil"))
    rig.hub.add("org/commit", RepoFiles({"ok.json": b"{}"}, commit="../../../evil"))

    async def body() -> None:
        service = rig.service()
        await service.start()
        for repo in ("org/traversal", "org/unc", "org/drive"):
            with pytest.raises(UnsafeNameError, match="refuses to write it"):
                await service.add(DownloadRequest(repo=repo, pattern="*"))
        with pytest.raises(UnsafeNameError, match="ETag"):
            await service.add(DownloadRequest(repo="org/etag", files=["ok.json"]))
        with pytest.raises(UnsafeNameError, match="commit hash"):
            await service.add(DownloadRequest(repo="org/commit", files=["ok.json"]))
        before = len(rig.hub.requests)
        for name in ("../x.gguf", "/etc/passwd", "a/../../b", "C:\\x", "//server/share/x"):
            with pytest.raises(InvalidInputError):
                await service.add(DownloadRequest(repo="org/model", files=[name]))
        with pytest.raises(InvalidInputError):
            await service.add(DownloadRequest(repo="org/../model", files=["x"]))
        with pytest.raises(InvalidInputError):
            await service.add(DownloadRequest(repo="org/model", revision="../../x", files=["x"]))
        assert len(rig.hub.requests) == before  # refused before asking the Hub
        assert service.view().items == []
        await service.close()

    asyncio.run(body())
    assert not outside.exists()
    assert not any(p.name == "evil" for p in rig.root.rglob("*"))
