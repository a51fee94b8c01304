"""The queue users see, built in the core: Hub files and Ollama pulls in one view, each item's
actions taken by the queue that holds it (not by its id's prefix), the kind on the wire; each
item a job of the job board."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from roundhouse.api.downloads import (
    JOB_STATES,
    DownloadItem,
    DownloadItemReply,
    DownloadRequest,
    DownloadState,
    OllamaPullItem,
)
from roundhouse.api.jobs import JobKind, JobState
from roundhouse.core.errors import NotFoundError, ServiceUnavailableError
from roundhouse.core.infra.jobs import JobBoard
from roundhouse.core.models.ollama_pulls.service import OllamaPulls
from roundhouse.core.models.queue import DownloadQueue
from tests.fakes.ollama import OllamaStandin, start_standin
from tests.processes import free_port
from tests.unit.models.test_downloads_server import FakeHub, RepoFiles, Rig, fake_hub, payload


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with fake_hub() as server:
        server.add("org/model", RepoFiles({"a.gguf": payload(4096)}, lfs={"a.gguf"}))
        yield server


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[OllamaStandin]:
    # Slow enough to pause while it pulls.
    ollama = start_standin(tmp_path / "ollama", free_port(), "--pull-delay", "0.2")
    try:
        yield ollama
    finally:
        ollama.stop()


def _closed() -> Exception:
    return ServiceUnavailableError("The queue of Ollama pulls is not open.")


def test_one_queue_holds_both_and_each_item_goes_to_the_queue_that_holds_it(
    hub: FakeHub, home_root: Path, standin: OllamaStandin
) -> None:
    async def main() -> None:
        rig = Rig(hub, home_root)
        board = JobBoard()
        heard: list[tuple[JobKind, JobState]] = []
        board.listen(lambda job: heard.append((job.kind, job.state)))
        downloads = rig.service(jobs=board)
        pulls = OllamaPulls(rig.data_dir, jobs=board)
        await downloads.start()
        await pulls.start()
        queue = DownloadQueue(lambda: downloads, lambda: pulls, _closed)
        try:
            view = await queue.add(DownloadRequest(repo="org/model", files=["a.gguf"]))
            pull = await queue.add_pull("small", standin.base_url, None)
            view = queue.view()
            assert [i.kind for i in view.items] == ["hub"]
            assert [i.id for i in view.ollama] == [pull.id] and view.totals.items == 2
            file_id = view.items[0].id
            # Each item's answer says its kind; a client reads it by that, not by its id.
            for item_id, kind in ((file_id, DownloadItem), (pull.id, OllamaPullItem)):
                got = queue.get(item_id)
                assert isinstance(got, kind)
                wire = DownloadItemReply.model_validate_json(got.model_dump_json()).root
                assert isinstance(wire, kind) and wire == got
            paused = await queue.pause(pull.id)
            assert isinstance(paused, OllamaPullItem) and paused.state == DownloadState.PAUSED
            resumed = await queue.resume(pull.id)
            assert resumed.state in (DownloadState.QUEUED, DownloadState.DOWNLOADING)
            # Both kinds are jobs of the board, their states copied as they change.
            pull_job = board.find(pull.id, JobKind.OLLAMA_PULL)
            assert pull_job is not None and pull_job.state in (JobState.QUEUED, JobState.RUNNING)
            await board.cancel(pull_job)  # through the pulls' own cancel
            cancelled = queue.get(pull.id)
            assert cancelled.state == DownloadState.CANCELLED
            assert pull_job.state == JobState.CANCELLED
            view = queue.view()
            file_job = board.find(file_id, JobKind.DOWNLOAD)
            assert file_job is not None and file_job.detail is not None
            assert JOB_STATES[view.items[0].state] == file_job.state
            assert any(kind == JobKind.DOWNLOAD for kind, _ in heard)
            assert (JobKind.OLLAMA_PULL, JobState.CANCELLED) in heard
            listed = board.listing(JobKind.OLLAMA_PULL).jobs
            assert listed[0].detail is not None and listed[0].detail["kind"] == "ollama"
            follow = queue.follow()
            first = await anext(follow)
            assert first.ollama[0].state == DownloadState.CANCELLED
            await follow.aclose()
            with pytest.raises(NotFoundError, match="No download has the id"):
                queue.get("ollama-0000000000")
            cleared = await queue.clear_finished()
            assert cleared.ollama == [] and board.find(pull.id) is None
        finally:
            await downloads.close()
            await pulls.close()

    asyncio.run(main())


def test_without_the_pulls_the_files_still_work_and_a_pull_says_why_not(
    hub: FakeHub, home_root: Path
) -> None:
    async def main() -> None:
        rig = Rig(hub, home_root)
        downloads = rig.service()
        await downloads.start()
        queue = DownloadQueue(lambda: downloads, lambda: None, _closed)
        try:
            view = await queue.add(DownloadRequest(repo="org/model", files=["a.gguf"]))
            assert view.ollama == [] and len(view.items) == 1
            assert queue.get(view.items[0].id).kind == "hub"
            with pytest.raises(ServiceUnavailableError, match="not open"):
                await queue.add_pull("small", "http://127.0.0.1:9", None)
        finally:
            await downloads.close()

    asyncio.run(main())
