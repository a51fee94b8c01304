"""The one job system: its state machine, runs the board owns, cancel, followers that wake on
a change, the bounded history of ended jobs, and listeners that hear every change."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from roundhouse.api.jobs import JobKind, JobState, JobView
from roundhouse.core.infra.jobs import Job, JobBoard, JobMirror, JobStateError


def _failed(exc: Exception) -> str:
    return f"it broke: {exc}"


def test_an_owned_job_moves_through_its_states_and_refuses_a_move_back() -> None:
    async def main() -> None:
        board = JobBoard()
        job = board.add(JobKind.DOWNLOAD, None, job_id="abc")
        assert (job.state, job.ended_at) == (JobState.QUEUED, None)
        job.move(JobState.RUNNING)
        job.move(JobState.QUEUED)  # paused: waits again
        job.move(JobState.RUNNING)
        job.move(JobState.FAILED, error="the disk is full")
        assert job.ended and job.ended_at is not None and job.error == "the disk is full"
        with pytest.raises(JobStateError):
            job.move(JobState.RUNNING)
        job.requeue()
        assert (job.state, job.error, job.ended_at) == (JobState.QUEUED, None, None)
        job.move(JobState.DONE)
        with pytest.raises(JobStateError):
            job.move(JobState.CANCELLED)
        with pytest.raises(JobStateError):
            board.add(JobKind.DOWNLOAD, None, job_id="abc")

    asyncio.run(main())


def test_a_run_ends_done_with_its_result_or_failed_in_the_owners_words() -> None:
    async def main() -> None:
        board = JobBoard()

        async def works(job: Job[list[int]]) -> str:
            job.detail.append(1)
            job.update(fraction=2.0, message="half")  # clamped to 1
            return "built"

        async def breaks(job: Job[None]) -> None:
            raise ValueError("no wheel")

        async def fails_itself(job: Job[None]) -> None:
            job.move(JobState.FAILED, error="all requests failed")

        ok = board.start(JobKind.INSTALL, [], works, failed=_failed)
        bad = board.start(JobKind.BENCH, None, breaks, failed=_failed)
        own = board.start(JobKind.BENCH, None, fails_itself, failed=_failed)
        assert ok.state == JobState.RUNNING
        for job in (ok, bad, own):
            assert job.task is not None
            await job.task
        assert (ok.state, ok.result, ok.detail, ok.fraction) == (JobState.DONE, "built", [1], 1.0)
        assert (bad.state, bad.error) == (JobState.FAILED, "it broke: no wheel")
        assert (own.state, own.error) == (JobState.FAILED, "all requests failed")
        assert [j.id for j in board.jobs(JobKind.BENCH)] == [bad.id, own.id]
        assert board.find(ok.id, JobKind.BENCH) is None and board.find(ok.id) is ok

    asyncio.run(main())


def test_cancel_stops_a_run_and_keeps_the_words_it_left_and_a_queued_job_never_runs() -> None:
    async def main() -> None:
        board = JobBoard()
        started = asyncio.Event()

        async def long(job: Job[None]) -> None:
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                job.error = "Cancelled; it resumes where it stopped."
                raise

        job = board.start(JobKind.INSTALL, None, long, failed=_failed)
        await started.wait()
        await board.cancel(job)
        assert (job.state, job.error) == (
            JobState.CANCELLED,
            "Cancelled; it resumes where it stopped.",
        )

        stopped: list[str] = []

        async def stop_it() -> None:
            stopped.append(owned.id)
            owned.move(JobState.CANCELLED)

        owned = board.add(JobKind.OLLAMA_PULL, None, canceller=stop_it)
        await board.cancel(owned)
        assert stopped == [owned.id] and owned.state == JobState.CANCELLED
        plain = board.add(JobKind.DOWNLOAD, None)
        await board.cancel(plain)
        assert plain.state == JobState.CANCELLED
        await board.cancel(plain)  # an ended job stays as it ended

    asyncio.run(main())


def test_followers_wake_on_a_change_and_not_before() -> None:
    async def main() -> None:
        board = JobBoard()
        job = board.add(JobKind.DOWNLOAD, None)
        seen = job.version
        follower = asyncio.create_task(job.wait(seen, 5.0))
        everyone = asyncio.create_task(board.changes.wait(board.changes.version, 5.0))
        await asyncio.sleep(0.05)
        assert not follower.done() and not everyone.done()
        job.update(fraction=0.5)
        assert await asyncio.wait_for(follower, 1.0) > seen
        assert await asyncio.wait_for(everyone, 1.0) > 0
        # Nothing changed: the wait lasts its timeout.
        assert await job.wait(job.version, 0.05) == job.version
        # An ended job has nothing more to say: no wait at all.
        job.move(JobState.CANCELLED)
        assert await asyncio.wait_for(job.wait(job.version, 60.0), 1.0) == job.version

    asyncio.run(main())


def test_each_kind_keeps_a_bounded_history_of_ended_jobs_the_oldest_go() -> None:
    async def main() -> None:
        now = [1000.0]
        board = JobBoard(keep_finished=2, clock=lambda: now[0])
        ended = []
        for _ in range(4):
            now[0] += 1
            job = board.add(JobKind.BENCH, None)
            job.move(JobState.DONE)
            ended.append(job.id)
        running = board.add(JobKind.BENCH, None, state=JobState.RUNNING)
        other = board.add(JobKind.INSTALL, None, state=JobState.DONE)
        assert [j.id for j in board.jobs(JobKind.BENCH)] == [*ended[2:], running.id]
        assert board.find(other.id) is other  # another kind's history is its own
        board.forget(running.id)
        assert board.find(running.id) is None

    asyncio.run(main())


def test_a_listener_hears_every_change_until_it_stops_and_a_broken_one_harms_nothing() -> None:
    async def main() -> None:
        board = JobBoard()
        heard: list[JobView] = []

        def broken(job: Job[Any]) -> None:
            raise RuntimeError("listener bug")

        board.listen(broken)
        stop = board.listen(lambda job: heard.append(job.view()))
        job = board.add(JobKind.AB, None, job_id="ab1")
        job.move(JobState.RUNNING)
        job.update(fraction=0.25, message="starting llama.cpp")
        job.move(JobState.DONE)
        stop()
        job.touch()
        assert [(v.state, v.fraction, v.message) for v in heard] == [
            (JobState.QUEUED, None, ""),
            (JobState.RUNNING, None, ""),
            (JobState.RUNNING, 0.25, "starting llama.cpp"),
            (JobState.DONE, 0.25, "starting llama.cpp"),
        ]
        assert heard[-1].kind == JobKind.AB and heard[-1].ended_at is not None
        # The generic view carries the kind's own shape when its owner gives one.
        job.snapshot = lambda: JobView(
            id="inner", kind=JobKind.AB, state=JobState.DONE, started_at=1.0
        )
        listed = board.listing(JobKind.AB).jobs
        assert [v.id for v in listed] == ["ab1"] and listed[0].detail is not None
        assert listed[0].detail["id"] == "inner" and job.view(detail=False).detail is None

    asyncio.run(main())


def test_close_cancels_every_run() -> None:
    async def main() -> None:
        board = JobBoard()

        async def forever(job: Job[None]) -> None:
            await asyncio.sleep(60)

        jobs = [board.start(JobKind.BENCH, None, forever, failed=_failed) for _ in range(3)]
        await asyncio.sleep(0)
        await board.close()
        assert [j.state for j in jobs] == [JobState.CANCELLED] * 3

    asyncio.run(main())


def test_a_mirror_copies_an_owners_records_and_a_resumed_record_is_a_new_job() -> None:
    async def main() -> None:
        board = JobBoard()
        heard: list[tuple[str, JobState, bool]] = []
        board.listen(lambda job: heard.append((job.id, job.state, board.find(job.id) is job)))
        cancelled: list[str] = []

        async def cancel(job_id: str) -> None:
            cancelled.append(job_id)

        mirror = JobMirror[dict[str, str]](
            board,
            JobKind.DOWNLOAD,
            snapshot=lambda rec: JobView(
                id=rec["id"], kind=JobKind.DOWNLOAD, state=JobState.QUEUED, started_at=0.0
            ),
            cancel=cancel,
        )
        record = {"id": "f1"}
        job = mirror.sync("f1", record, JobState.QUEUED, started_at=5.0)
        assert (job.state, job.started_at) == (JobState.QUEUED, 5.0)
        assert mirror.sync("f1", record, JobState.RUNNING, started_at=5.0, fraction=0.5) is job
        await board.cancel(job)
        assert cancelled == ["f1"]  # the owner cancels; its next save moves the job
        failed = mirror.sync("f1", record, JobState.FAILED, started_at=5.0, error="disk full")
        assert failed is job and (job.state, job.error, job.fraction) == (
            JobState.FAILED,
            "disk full",
            None,
        )
        again = mirror.sync("f1", record, JobState.QUEUED, started_at=5.0)
        assert again is not job and board.find("f1") is again and again.error is None
        detail = again.view().detail
        assert detail is not None and detail["id"] == "f1"
        mirror.forget("f1")
        assert board.find("f1") is None
        assert heard[-1] == ("f1", JobState.QUEUED, False)  # listeners hear it go

    asyncio.run(main())
