"""The download queue against a small Hub: cache layout, resume across service objects, pause,
resume, cancel, the concurrency limit, the space preflight, bounds and the progress stream."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import hf_hub_download, scan_cache_dir

from roundhouse.api.downloads import DownloadQueueView, DownloadRequest, DownloadState
from roundhouse.api.settings import ModelsSettings
from roundhouse.core.errors import NotFoundError
from roundhouse.core.models.downloads import GatedRepoError, NotEnoughSpaceError
from roundhouse.core.models.downloads.store import QUEUE_FILE
from roundhouse.core.models.queue import follow_queue
from tests.unit.models.test_downloads_server import (
    COMMIT,
    FakeHub,
    RepoFiles,
    Rig,
    fake_hub,
    git_oid,
    payload,
    sha256,
    wait_bytes,
    wait_state,
)

MiB = 1024 * 1024
BIG = payload(2 * MiB + 12345)
NESTED = "quants/Q4_K_M/model-Q4_K_M.gguf"
CONFIG = b'{"model_type": "llama"}'


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with fake_hub() as server:
        server.add(
            "org/model",
            RepoFiles(
                {
                    NESTED: BIG,
                    "config.json": CONFIG,
                    "b.gguf": payload(MiB, 2),
                    "c.gguf": payload(MiB, 3),
                },
                lfs={NESTED, "b.gguf", "c.gguf"},
            ),
        )
        yield server


@pytest.fixture
def rig(hub: FakeHub, home_root: Path) -> Rig:
    return Rig(hub, home_root)


def blob_dir(rig: Rig) -> Path:
    return rig.cache / "models--org--model" / "blobs"


def test_files_land_in_the_hugging_face_cache_layout(rig: Rig) -> None:
    async def body() -> None:
        service = rig.service()
        await service.start()
        items = await service.add(DownloadRequest(repo="org/model", files=[NESTED, "config.json"]))
        # Started at once: two files, two download slots.
        assert [i.state for i in items] == [DownloadState.DOWNLOADING] * 2
        for item in items:
            done = await wait_state(service, item.id, DownloadState.DONE)
            assert done.bytes_done == done.size and done.error is None
            assert done.commit == COMMIT
        # Asking again finds them in the cache: no new transfer.
        before = len(rig.hub.file_gets())
        again = await service.add(DownloadRequest(repo="org/model", pattern="*.json"))
        assert again[0].state == DownloadState.DONE and len(rig.hub.file_gets()) == before
        await service.close()

    asyncio.run(body())
    repo = rig.cache / "models--org--model"
    link = repo / "snapshots" / COMMIT / NESTED
    # A relative link as deep as the path: snapshots/<commit>/quants/Q4_K_M/<file>.
    assert str(link.readlink()) == f"../../../../blobs/{sha256(BIG)}"
    assert link.read_bytes() == BIG
    config_link = repo / "snapshots" / COMMIT / "config.json"
    assert str(config_link.readlink()) == f"../../blobs/{git_oid(CONFIG)}"
    assert (repo / "refs" / "main").read_text() == COMMIT
    assert not list(repo.glob("blobs/*.incomplete"))
    # huggingface_hub (and so vLLM and mlx-lm) finds them offline.
    found = hf_hub_download("org/model", NESTED, cache_dir=rig.cache, local_files_only=True)
    assert Path(found).read_bytes() == BIG
    info = scan_cache_dir(rig.cache)
    assert not info.warnings
    (cached,) = info.repos
    (revision,) = cached.revisions
    assert {f.file_name for f in revision.files} == {
        "model-Q4_K_M.gguf",
        "config.json",
    }


def test_a_new_service_resumes_from_the_partial_with_range(rig: Rig) -> None:
    rig.hub.faults.hold_at = MiB
    partial = blob_dir(rig) / f"{sha256(BIG)}.incomplete"

    async def first() -> str:
        service = rig.service()
        await service.start()
        (item,) = await service.add(DownloadRequest(repo="org/model", files=[NESTED]))
        await wait_bytes(service, item.id, MiB)
        await service.close()  # the daemon stops mid-transfer
        return item.id

    item_id = asyncio.run(first())
    assert partial.stat().st_size == MiB
    assert (rig.data_dir / QUEUE_FILE).is_file()
    rig.hub.faults.hold_at = None

    async def second() -> str:
        service = rig.service()
        await service.start()
        assert service.get(item_id).bytes_done == MiB
        done = await wait_state(service, item_id, DownloadState.DONE)
        assert done.local_path is not None
        await service.close()
        return done.local_path

    assert Path(asyncio.run(second())).read_bytes() == BIG
    last = rig.hub.file_gets()[-1]
    assert last.headers["range"] == f"bytes={MiB}-"
    assert last.headers["if-range"] == f'"{sha256(BIG)}"'


def test_bytes_past_the_durable_size_are_not_trusted(rig: Rig) -> None:
    """A crash may leave unflushed garbage at the end: the next start cuts it off."""
    rig.hub.faults.hold_at = MiB
    partial = blob_dir(rig) / f"{sha256(BIG)}.incomplete"

    async def first() -> str:
        service = rig.service()
        await service.start()
        (item,) = await service.add(DownloadRequest(repo="org/model", files=[NESTED]))
        await wait_bytes(service, item.id, MiB)
        await service.close()
        return item.id

    item_id = asyncio.run(first())
    with partial.open("ab") as handle:
        handle.write(b"\0" * 5000)
    rig.hub.faults.hold_at = None

    async def second() -> None:
        service = rig.service()
        await service.start()
        await wait_state(service, item_id, DownloadState.DONE)
        await service.close()

    asyncio.run(second())
    assert rig.hub.file_gets()[-1].headers["range"] == f"bytes={MiB}-"
    assert (blob_dir(rig) / sha256(BIG)).read_bytes() == BIG


def test_pause_resume_and_cancel(rig: Rig) -> None:
    rig.hub.faults.hold_at = MiB
    partial = blob_dir(rig) / f"{sha256(BIG)}.incomplete"

    async def body() -> None:
        service = rig.service()
        await service.start()
        (item,) = await service.add(DownloadRequest(repo="org/model", files=[NESTED]))
        await wait_bytes(service, item.id, MiB)
        paused = await service.pause(item.id)
        assert paused.state == DownloadState.PAUSED and paused.bytes_done == MiB
        assert partial.stat().st_size == MiB
        rig.hub.faults.hold_at = None
        await service.resume(item.id)
        done = await wait_state(service, item.id, DownloadState.DONE)
        assert done.bytes_done == len(BIG)

        rig.hub.faults.hold_at = MiB // 2
        (other,) = await service.add(DownloadRequest(repo="org/model", files=["b.gguf"]))
        await wait_bytes(service, other.id, MiB // 2)
        b_partial = blob_dir(rig) / f"{sha256(payload(MiB, 2))}.incomplete"
        assert b_partial.exists()
        cancelled = await service.cancel(other.id)
        assert cancelled.state == DownloadState.CANCELLED and cancelled.bytes_done == 0
        assert not b_partial.exists()  # what the user asked: the partial goes
        # Resumed after a cancel, it starts over.
        rig.hub.faults.hold_at = None
        await service.resume(other.id)
        await wait_state(service, other.id, DownloadState.DONE)
        assert "range" not in rig.hub.file_gets()[-1].headers
        with pytest.raises(Exception, match="downloaded already"):
            await service.cancel(other.id)
        await service.close()

    asyncio.run(body())


def test_pausing_and_cancelling_queued_items(rig: Rig) -> None:
    rig.settings = ModelsSettings(max_concurrent_downloads=1)
    rig.hub.faults.hold_at = 1000

    async def body() -> None:
        service = rig.service()
        await service.start()
        first, second = await service.add(
            DownloadRequest(repo="org/model", files=[NESTED, "b.gguf"])
        )
        await wait_bytes(service, first.id, 1000)
        assert service.get(second.id).state == DownloadState.QUEUED
        assert (await service.pause(second.id)).state == DownloadState.PAUSED
        assert (await service.cancel(second.id)).state == DownloadState.CANCELLED
        assert (await service.cancel(second.id)).state == DownloadState.CANCELLED
        await service.cancel(first.id)
        assert len(rig.hub.file_gets()) == 1  # the queued one never started
        await service.close()

    asyncio.run(body())


def test_the_concurrency_limit_holds(rig: Rig) -> None:
    rig.settings = ModelsSettings(max_concurrent_downloads=2)
    rig.hub.faults.hold_at = 1000

    async def body() -> None:
        service = rig.service()
        await service.start()
        items = await service.add(DownloadRequest(repo="org/model", pattern="*.gguf"))
        assert len(items) == 3
        await wait_bytes(service, items[0].id, 1000)
        await wait_bytes(service, items[1].id, 1000)
        states = [service.get(i.id).state for i in items]
        assert states.count(DownloadState.DOWNLOADING) == 2
        assert service.view().totals.active == 2 and service.view().totals.queued == 1
        rig.hub.release.set()
        for item in items:
            await wait_state(service, item.id, DownloadState.DONE)
        await service.close()

    asyncio.run(body())
    assert rig.hub.max_open_gets == 2


def test_preflight_counts_the_whole_queue(rig: Rig) -> None:
    rig.hub.faults.hold_at = 1000
    rig.free_bytes = int(len(BIG) * 1.2) + 100_000  # room for the first file only

    async def body() -> None:
        service = rig.service()
        await service.start()
        (first,) = await service.add(DownloadRequest(repo="org/model", files=[NESTED]))
        with pytest.raises(NotEnoughSpaceError) as refused:
            await service.add(DownloadRequest(repo="org/model", files=["b.gguf"]))
        words = refused.value.detail
        assert "GB" in words and "free" in words and str(rig.cache) in words
        assert [i.id for i in service.view().items] == [first.id]
        await service.close()

    asyncio.run(body())


def test_the_queue_keeps_a_bounded_number_of_finished_items(rig: Rig) -> None:
    files = {f"f{n:02}.json": f"{{{n}}}".encode() for n in range(14)}
    rig.hub.add("org/many", RepoFiles(files))
    rig.settings = ModelsSettings(max_finished_downloads=10, max_concurrent_downloads=4)

    async def body() -> None:
        service = rig.service()
        await service.start()
        items = await service.add(DownloadRequest(repo="org/many", pattern="*.json"))
        assert len(items) == 14
        for item in items[-4:]:
            await wait_state(service, item.id, DownloadState.DONE)
        async with asyncio.timeout(10):  # each finished file prunes the list after it
            while len(service.view().items) > 10 or service.view().totals.active:
                await service.changes.wait(service.changes.version, 0.1)
        assert len(service.view().items) == 10
        await service.close()
        again = rig.service()
        await again.start()
        assert len(again.view().items) == 10
        assert await again.clear_finished() == 10 and again.view().items == []
        await again.close()

    asyncio.run(body())


def test_progress_stream_is_throttled_and_ends_done(rig: Rig) -> None:
    async def body() -> list[DownloadQueueView]:
        service = rig.service()
        await service.start()
        views: list[DownloadQueueView] = []

        async def follow() -> None:
            async for view in follow_queue(service.view, [service.changes], interval_s=0.1):
                views.append(view)
                if view.items and all(i.state == DownloadState.DONE for i in view.items):
                    return

        follower = asyncio.create_task(follow())
        await asyncio.sleep(0)
        await service.add(DownloadRequest(repo="org/model", files=[NESTED]))
        await asyncio.wait_for(follower, 15)
        await service.close()
        return views

    views = asyncio.run(body())
    assert views[0].items == []
    assert views[-1].totals.unfinished_bytes == 0
    assert views[-1].items[0].local_path is not None


def test_hub_refusals_are_words(rig: Rig) -> None:
    rig.hub.add("org/gated", RepoFiles({"m.gguf": b"x" * 100}, {"m.gguf"}, gated=True))

    async def body() -> None:
        service = rig.service()
        await service.start()
        with pytest.raises(GatedRepoError, match="accept its terms"):
            await service.add(DownloadRequest(repo="org/gated", files=["m.gguf"]))
        with pytest.raises(NotFoundError, match="No repository org/nothing"):
            await service.add(DownloadRequest(repo="org/nothing", files=["m.gguf"]))
        with pytest.raises(NotFoundError, match=r"has no file 'nope\.gguf'"):
            await service.add(DownloadRequest(repo="org/model", files=["nope.gguf"]))
        with pytest.raises(NotFoundError, match="No file of org/model matches"):
            await service.add(DownloadRequest(repo="org/model", pattern="*.safetensors"))
        assert service.view().items == []
        await service.close()

    asyncio.run(body())


def test_an_empty_file_is_downloaded_too(rig: Rig) -> None:
    rig.hub.add("org/empty", RepoFiles({"empty.txt": b"", "tokenizer.json": b"{}"}))

    async def body() -> None:
        service = rig.service()
        await service.start()
        items = await service.add(DownloadRequest(repo="org/empty", pattern="*"))
        for item in items:
            done = await wait_state(service, item.id, DownloadState.DONE)
            assert done.size == done.bytes_done
        await service.close()

    asyncio.run(body())
    found = hf_hub_download("org/empty", "empty.txt", cache_dir=rig.cache, local_files_only=True)
    assert Path(found).read_bytes() == b""
