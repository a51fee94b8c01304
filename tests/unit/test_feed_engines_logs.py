"""The change feed's engines and logs kinds: a detection touches the engines' counter once
(a cached read does not) and reaches the feed as an engines event; an engine's output,
written from a thread, is heard on the loop once per burst and reaches the feed as line
counts (never the lines), at most four times a second."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from pathlib import Path

from roundhouse.api.engines import (
    DetectedEngine,
    EngineDetection,
    EngineId,
    EnginesOverview,
    FoundBy,
)
from roundhouse.api.events import EnginesEvent, EventKind, LogsEvent, parse_event
from roundhouse.api.hardware import GpuSample, HardwareInventory
from roundhouse.api.instances import LogCount, LogCounts
from roundhouse.api.settings import Settings
from roundhouse.base.paths import resolve_home
from roundhouse.cli.events_view import EventLines
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.infra.changes import Changes
from roundhouse.core.infra.feed import MIN_INTERVAL_S, Feed, Published, relay
from roundhouse.core.infra.thread_touch import ThreadTouch
from roundhouse.core.supervise.logcapture import LogCapture
from roundhouse.server.services import DaemonState


class _NoHardware:
    def inventory(self) -> HardwareInventory:
        raise AssertionError("not asked")

    def sample_gpus(self) -> list[GpuSample]:
        return []

    def close(self) -> None:
        pass


def _overview(version: str) -> EnginesOverview:
    found = DetectedEngine(
        id=EngineId.LLAMA_CPP,
        found_by=FoundBy.PATH,
        path="/bin/llama-server",
        version=version,
        where="on PATH",
    )
    return EnginesOverview(
        catalog=load_catalog(),
        detection=EngineDetection(found=[found], missing=[]),
        detected_at=time.time(),
    )


def test_each_detection_touches_the_engines_counter_and_reaches_the_feed(tmp_path: Path) -> None:
    versions = iter(["b1", "b2"])

    def detect(_: Settings) -> EnginesOverview:
        return _overview(next(versions))

    async def main() -> None:
        state = DaemonState(resolve_home(tmp_path), Settings(), _NoHardware(), detect)
        feed = Feed(first_seq=1)

        async def snapshot() -> EnginesOverview | None:
            return state.engines_detected

        task = asyncio.create_task(
            relay(feed, EventKind.ENGINES, snapshot, [state.engines_changes], min_interval_s=0)
        )
        await asyncio.sleep(0.05)
        assert feed.head == 0, "nothing detected yet: nothing published"
        first = await state.engines()
        assert state.engines_changes.version == 1
        await state.engines()  # cached: no detection, no touch
        assert state.engines_changes.version == 1
        events = feed.follow(since=0)
        published = await asyncio.wait_for(anext(events), 2)
        assert isinstance(published, Published) and published.data == first
        state.detect_engines_soon()  # the settings named other Pythons
        second = await asyncio.wait_for(anext(events), 2)
        assert isinstance(second, Published)
        wire = parse_event(second.json)
        assert isinstance(wire, EnginesEvent)
        assert wire.data.detection.found[0].version == "b2"
        assert state.engines_changes.version == 2
        line = EventLines().line(wire)
        assert "engines" in line and "1 engine found: llama.cpp b2" in line
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await events.aclose()

    asyncio.run(main())


def test_output_written_by_a_thread_is_heard_on_the_loop_once_per_burst(tmp_path: Path) -> None:
    async def main() -> None:
        changes = Changes()
        capture = LogCapture(tmp_path / "engine.log")
        capture.on_lines = ThreadTouch(changes, asyncio.get_running_loop())

        def burst() -> None:
            for n in range(200):
                capture.add(f"line {n}")

        writer = threading.Thread(target=burst)
        writer.start()
        writer.join()
        version = await changes.wait(0, 2)
        await asyncio.sleep(0.05)
        # Touches scheduled while one was pending were folded into it.
        assert 1 <= changes.version < 200, changes.version
        assert version >= 1 and capture.count == 200
        capture.add("one more")
        await changes.wait(changes.version, 2)
        assert capture.count == 201
        capture.close()

    asyncio.run(main())


def test_line_counts_reach_the_feed_as_logs_events_without_the_lines(tmp_path: Path) -> None:
    async def main() -> None:
        feed = Feed(first_seq=1)
        changes = Changes()
        capture = LogCapture(tmp_path / "engine.log")
        capture.on_lines = ThreadTouch(changes, asyncio.get_running_loop())

        async def counts() -> LogCounts:
            return LogCounts(instances=[LogCount(id="a1", generation=1, lines=capture.count)])

        task = asyncio.create_task(relay(feed, EventKind.LOGS, counts, [changes]))
        events = feed.follow(since=0)
        empty = await asyncio.wait_for(anext(events), 2)
        assert isinstance(empty, Published)
        writer = threading.Thread(target=lambda: [capture.add(f"secret {n}") for n in range(50)])
        writer.start()
        writer.join()
        seen: list[LogsEvent] = []
        while not seen or seen[-1].data.instances[0].lines < 50:
            item = await asyncio.wait_for(anext(events), 2)
            assert isinstance(item, Published)
            wire = parse_event(item.json)
            assert isinstance(wire, LogsEvent)
            assert "secret" not in item.json, "counts only: no line reaches the feed"
            seen.append(wire)
        # Throttled: 50 lines are not 50 events, and each comes an interval after the last.
        assert len(seen) < 10
        times = [empty.at, *(event.at for event in seen)]
        assert all(b - a >= MIN_INTERVAL_S * 0.9 for a, b in itertools.pairwise(times))
        assert EventLines().line(seen[-1]).endswith("output: a1 50 lines")
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await events.aclose()
        capture.close()

    asyncio.run(main())
