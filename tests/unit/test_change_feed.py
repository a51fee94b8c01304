"""The change feed: consecutive sequence numbers, resume, a reset for a follower that fell
out of the window or comes from another run, a bounded ring, a slow follower that costs no
memory, unchanged states not published, and events the wire types read back."""

from __future__ import annotations

import asyncio
import tracemalloc
from collections.abc import AsyncGenerator

from roundhouse.api.events import (
    EventKind,
    InstancesEvent,
    JobsEvent,
    ResetEvent,
    SettingsEvent,
    parse_event,
)
from roundhouse.api.events import ResetReason as WireResetReason
from roundhouse.api.instances import InstanceList
from roundhouse.api.jobs import JobKind, JobList, JobState, JobView
from roundhouse.api.settings import Settings
from roundhouse.core.infra.changes import Changes
from roundhouse.core.infra.feed import Feed, FeedItem, Published, Reset, ResetReason, relay
from roundhouse.core.infra.jobs import JobBoard


def _settings(port: int) -> Settings:
    return Settings.model_validate({"daemon": {"port": port}})


async def _take(events: AsyncGenerator[FeedItem, None], count: int) -> list[FeedItem]:
    return [await asyncio.wait_for(anext(events), 2.0) for _ in range(count)]


def test_events_have_consecutive_numbers_and_unchanged_states_are_not_published() -> None:
    feed = Feed(first_seq=100)
    first = feed.publish("settings", _settings(1))
    assert first is not None and first.seq == 100 and feed.head == 100
    assert feed.publish("settings", _settings(1)) is None  # the same state: nothing new
    second = feed.publish("settings", _settings(2))
    third = feed.publish("instances", InstanceList(instances=[]))
    assert second is not None and third is not None
    assert (second.seq, third.seq, feed.head, feed.oldest) == (101, 102, 102, 100)
    assert feed.latest("settings") == _settings(2)


def test_sequence_numbers_start_from_the_clock_so_another_runs_resume_point_is_unknown() -> None:
    earlier = Feed(clock=lambda: 1000.0)
    assert earlier.head == 1_000_000
    later = Feed(clock=lambda: 1005.0)
    for _ in range(3):
        earlier.publish("settings", _settings(earlier.head % 1000 + 1))

    async def main() -> None:
        events = later.follow(since=earlier.head)
        reset = await _take(events, 1)
        await events.aclose()
        assert isinstance(reset[0], Reset) and reset[0].reason is ResetReason.UNKNOWN

    asyncio.run(main())


def test_a_new_follower_is_told_to_reset_then_sees_each_change() -> None:
    async def main() -> None:
        feed = Feed(first_seq=1)
        feed.publish("settings", _settings(1))
        events = feed.follow()
        (reset,) = await _take(events, 1)
        assert isinstance(reset, Reset) and (reset.reason, reset.seq) == (ResetReason.NEW, 1)
        feed.publish("settings", _settings(2))
        feed.publish("instances", InstanceList(instances=[]))
        got = await _take(events, 2)
        assert [(e.seq, e.kind) for e in got] == [(2, "settings"), (3, "instances")]
        await events.aclose()

    asyncio.run(main())


def test_a_follower_resumes_after_the_last_event_it_saw() -> None:
    async def main() -> None:
        feed = Feed(first_seq=1)
        for port in range(1, 6):
            feed.publish("settings", _settings(port))
        events = feed.follow(since=3)
        got = await _take(events, 2)
        assert [e.seq for e in got] == [4, 5]
        # Caught up: it waits for the next event rather than repeating any.
        waiting = asyncio.ensure_future(anext(events))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        feed.publish("settings", _settings(9))
        assert (await asyncio.wait_for(waiting, 2.0)).seq == 6
        await events.aclose()
        # Resuming at the newest event replays nothing.
        at_head = feed.follow(since=feed.head)
        waiting = asyncio.ensure_future(anext(at_head))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        await at_head.aclose()

    asyncio.run(main())


def test_a_resume_point_that_fell_out_of_the_ring_gets_a_reset_then_the_new_events() -> None:
    async def main() -> None:
        feed = Feed(capacity=4, first_seq=1)
        for port in range(1, 11):
            feed.publish("settings", _settings(port))
        assert (feed.oldest, feed.head) == (7, 10)
        events = feed.follow(since=2)
        (reset,) = await _take(events, 1)
        assert isinstance(reset, Reset)
        assert (reset.reason, reset.seq, reset.oldest) == (ResetReason.BEHIND, 10, 7)
        feed.publish("settings", _settings(99))
        (after,) = await _take(events, 1)
        assert after.seq == 11
        await events.aclose()
        # Just inside the window resumes without a reset.
        inside = feed.follow(since=feed.oldest - 1)
        got = await _take(inside, 1)
        assert isinstance(got[0], Published) and got[0].seq == feed.oldest
        await inside.aclose()

    asyncio.run(main())


def test_the_ring_is_bounded_and_a_slow_follower_costs_no_memory() -> None:
    async def main() -> None:
        feed = Feed(capacity=8, first_seq=1)
        slow = feed.follow(since=0)
        feed.publish("settings", _settings(1))
        first = await _take(slow, 1)  # the slow follower reads one, then stops reading
        assert first[0].seq == 1
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for n in range(5000):
            feed.publish("settings", _settings(n % 60000 + 2))
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
        # 5000 settings events held anywhere would be megabytes; eight are a few kB.
        assert grown < 200_000, grown
        assert len(list(feed._ring)) == 8
        # When it reads again it has fallen out: a reset, then the newest events.
        (reset,) = await _take(slow, 1)
        assert isinstance(reset, Reset) and reset.reason is ResetReason.BEHIND
        await slow.aclose()

    asyncio.run(main())


def test_a_follower_that_falls_out_while_reading_is_reset_not_given_a_gap() -> None:
    async def main() -> None:
        feed = Feed(capacity=4, first_seq=1)
        for port in range(1, 5):
            feed.publish("settings", _settings(port))
        events = feed.follow(since=0)
        (one,) = await _take(events, 1)
        assert one.seq == 1
        # It holds the batch it read (2, 3, 4): those are still delivered, in order...
        for port in range(10, 20):
            feed.publish("settings", _settings(port))
        got = await _take(events, 4)
        assert [e.seq for e in got[:3]] == [2, 3, 4]
        # ...then, since 5 is gone, a reset instead of a jump to 11.
        assert isinstance(got[3], Reset) and got[3].seq == feed.head
        await events.aclose()

    asyncio.run(main())


def test_published_events_read_back_as_the_wire_types() -> None:
    feed = Feed(first_seq=7)
    settings = feed.publish("settings", _settings(5))
    jobs_state = JobList(
        jobs=[JobView(id="j1", kind=JobKind.BENCH, state=JobState.RUNNING, started_at=1.0)]
    )
    assert settings is not None
    read = parse_event(settings.json)
    assert isinstance(read, SettingsEvent) and read.seq == 7 and read.data == _settings(5)
    jobs = feed.publish("jobs", jobs_state)
    assert jobs is not None
    read_jobs = parse_event(jobs.json)
    assert isinstance(read_jobs, JobsEvent) and read_jobs.data == jobs_state
    instances = feed.publish("instances", InstanceList(instances=[]))
    assert instances is not None
    assert isinstance(parse_event(instances.json), InstancesEvent)
    reset = Reset(9, 2.5, ResetReason.BEHIND, 3)
    read_reset = parse_event(reset.json)
    assert isinstance(read_reset, ResetEvent)
    assert (read_reset.seq, read_reset.reason, read_reset.oldest) == (9, WireResetReason.BEHIND, 3)
    assert {str(r) for r in ResetReason} == {str(r) for r in WireResetReason}
    assert read_reset.kind == EventKind.RESET


def test_a_relay_publishes_at_each_change_and_survives_a_failing_snapshot() -> None:
    async def main() -> None:
        feed = Feed(first_seq=1)
        source = Changes()
        port = [1]
        calls = [0]

        async def snapshot() -> Settings:
            calls[0] += 1
            if calls[0] == 2:
                raise RuntimeError("a bug in one kind")
            return _settings(port[0])

        task = asyncio.create_task(relay(feed, "settings", snapshot, [source], min_interval_s=0))
        events = feed.follow(since=0)
        (first,) = await _take(events, 1)
        assert first.seq == 1
        port[0] = 2
        source.touch()  # this snapshot fails: logged, nothing published
        await asyncio.sleep(0.05)
        assert feed.head == 1
        source.touch()
        (second,) = await _take(events, 1)
        assert isinstance(second, Published) and second.data == _settings(2)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await events.aclose()

    asyncio.run(main())


def test_the_job_boards_changes_reach_the_feed_as_jobs_events() -> None:
    async def main() -> None:
        feed = Feed(first_seq=1)
        board = JobBoard()

        async def listing() -> JobList:
            return board.listing()

        task = asyncio.create_task(relay(feed, "jobs", listing, [board.changes], min_interval_s=0))
        events = feed.follow(since=0)
        (empty,) = await _take(events, 1)
        assert isinstance(empty, Published) and empty.data == JobList(jobs=[])
        job = board.add(JobKind.BENCH, None, job_id="b1")
        (added,) = await _take(events, 1)
        assert isinstance(added, Published)
        read = parse_event(added.json)
        assert isinstance(read, JobsEvent)
        assert [(j.id, j.state) for j in read.data.jobs] == [("b1", JobState.QUEUED)]
        job.move(JobState.RUNNING)
        job.move(JobState.DONE)
        # Coalesced or not, the last jobs event says it is done.
        states: list[JobState] = []
        while states != [JobState.DONE]:
            (moved,) = await _take(events, 1)
            assert isinstance(moved, Published) and isinstance(moved.data, JobList)
            states = [j.state for j in moved.data.jobs]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await events.aclose()

    asyncio.run(main())
