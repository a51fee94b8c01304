"""The update check on the change feed: a check that ends (or fails) and the setting saved
touch the checker's changes, the relay publishes the status as the `updates` kind, and
`roundhouse events` says it in a line."""

from __future__ import annotations

import asyncio
from pathlib import Path

from roundhouse.api.events import EventKind, UpdatesEvent, parse_event
from roundhouse.api.updates import UpdateStatus
from roundhouse.cli.events_view import EventLines
from roundhouse.core.infra.feed import Feed, relay
from roundhouse.core.system.updates import UpdateChecker, UpdateCheckError


def test_a_check_reaches_the_feed_as_the_updates_kind(tmp_path: Path) -> None:
    answers: list[str | Exception] = ["0.2.0", UpdateCheckError("offline")]

    async def fetch(url: str, current: str) -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def scenario() -> list[UpdateStatus]:
        checker = UpdateChecker("0.1.0", tmp_path / "u.json", lambda: True, fetch=fetch)
        feed = Feed(16)

        async def status() -> UpdateStatus:
            return checker.status()

        task = asyncio.create_task(
            relay(feed, EventKind.UPDATES, status, [checker.changes], min_interval_s=0.0)
        )
        seen: list[UpdateStatus] = []

        async def published(count: int) -> None:
            while len(seen) < count:
                await asyncio.sleep(0.01)
                latest = feed.latest(EventKind.UPDATES)
                if isinstance(latest, UpdateStatus) and (not seen or latest != seen[-1]):
                    seen.append(latest)

        await asyncio.wait_for(published(1), 5)
        before = checker.changes.version
        await checker.check()
        assert checker.changes.version == before + 1
        await asyncio.wait_for(published(2), 5)
        await checker.check()  # a failure is a change too: its words
        await asyncio.wait_for(published(3), 5)
        task.cancel()
        return seen

    first, found, failed = asyncio.run(scenario())
    assert first.latest is None and not first.newer
    assert found.latest == "0.2.0" and found.newer
    assert failed.error == "offline" and failed.latest == "0.2.0"
    event = parse_event(UpdatesEvent(seq=5, at=0.0, data=found).model_dump_json())
    assert isinstance(event, UpdatesEvent) and event.data == found
    line = EventLines().line(event)
    assert "update check: Roundhouse 0.2.0 is out (this is 0.1.0)." in line
