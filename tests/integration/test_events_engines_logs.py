"""The change feed's engines and logs kinds through a real daemon and the real llama-server
on the tiny model: a detection asked by a client, and saved settings that name other
Pythons, each show as an engines event that finds llama.cpp; a started engine's output
shows as logs events whose count the log route's `since` follows, with no line on the feed."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from contextlib import aclosing
from pathlib import Path
from typing import TypeVar

import httpx
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.events import EnginesEvent, LogsEvent
from roundhouse.api.instances import InstanceStatus, StartRequest
from roundhouse.client import DaemonClient
from tests.daemon_process import DaemonProcess, path_with, running_daemon, wait_settled

pytestmark = pytest.mark.timeout(300)

E = TypeVar("E", EnginesEvent, LogsEvent)


@pytest.fixture(scope="module")
def daemon(
    llama_server_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DaemonProcess]:
    root = tmp_path_factory.mktemp("events-engines-logs") / "home"
    with running_daemon(root, env=path_with(llama_server_binary)) as running:
        yield running


class _Follower:
    """Reads the feed from its newest event on, one wanted event at a time."""

    def __init__(self, stream: DaemonClient) -> None:
        self._stream = stream
        self.since: int | None = None

    async def start(self) -> None:
        async with aclosing(self._stream.events()) as first:
            self.since = (await anext(first)).seq

    async def next(self, kind: type[E], where: Callable[[E], bool], timeout_s: float) -> E:
        async def find() -> E:
            async with aclosing(self._stream.events(self.since)) as events:
                async for event in events:
                    self.since = event.seq
                    if isinstance(event, kind) and where(event):
                        return event
            raise AssertionError("the feed ended")

        return await asyncio.wait_for(find(), timeout_s)


def _found_llama(event: EnginesEvent) -> bool:
    return any(e.id == EngineId.LLAMA_CPP for e in event.data.detection.found)


def test_a_detection_and_saved_pythons_show_as_engines_events(daemon: DaemonProcess) -> None:
    async def main() -> None:
        async with (
            DaemonClient(daemon.url, daemon.token) as client,
            DaemonClient(daemon.url, daemon.token) as stream,
        ):
            await client.engines()  # the start's detection is done
            feed = _Follower(stream)
            await feed.start()
            asked = await client.engines(refresh=True)
            # The start's own detection may be published after the follower began (events
            # are coalesced for up to 0.25 s): the one wanted is the asked one's.
            event = await feed.next(
                EnginesEvent, lambda e: e.data.detected_at >= asked.detected_at, 30
            )
            assert _found_llama(event)
            assert event.data == asked, "the feed carries what the route answered"

            # Saved settings that name other Pythons: the daemon looks in them by itself.
            settings = await client.settings()
            pythons = [*settings.engines.python_paths, sys.executable]
            changed = settings.model_copy(
                update={"engines": settings.engines.model_copy(update={"python_paths": pythons})}
            )
            await client.put_settings(changed)
            again = await feed.next(
                EnginesEvent, lambda e: e.data.detected_at > event.data.detected_at, 60
            )
            assert _found_llama(again)
            assert (await client.engines()).detected_at >= again.data.detected_at

    asyncio.run(main())


def test_an_engines_output_shows_as_line_counts_the_log_route_follows(
    daemon: DaemonProcess, tiny_gguf: Path
) -> None:
    async def main() -> None:
        async with (
            DaemonClient(daemon.url, daemon.token) as client,
            DaemonClient(daemon.url, daemon.token) as stream,
        ):
            feed = _Follower(stream)
            await feed.start()
            request = StartRequest(
                engine=EngineId.LLAMA_CPP,
                options=InstanceOptions(model=str(tiny_gguf), ctx_size=512),
            )
            started = (await client.start_instance(request)).id
            try:

                def count(event: LogsEvent) -> int:
                    mine = [c.lines for c in event.data.instances if c.id == started]
                    return mine[0] if mine else 0

                first = await feed.next(LogsEvent, lambda e: count(e) > 0, 60)
                assert "llama" not in repr(first.data), "counts only: no line on the feed"
                info = await wait_settled(client, started, 90)
                assert info.status is InstanceStatus.READY
                # The lines the count names are there to read, from 0 up to it.
                logs = await client.instance_logs(started, since=0, limit=5000)
                assert logs.next >= count(first) and len(logs.lines) >= count(first)
                mine = next(c for c in first.data.instances if c.id == started)
                assert logs.generation == mine.generation
                # A request makes the engine write more: the count moves on, and `since`
                # reads only the new lines.
                served = next(
                    m.id for m in (await client.gateway_models()).models if m.instance == started
                )
                async with httpx.AsyncClient(trust_env=False, timeout=60) as http:
                    chat = await http.post(
                        daemon.url + "/v1/chat/completions",
                        json={
                            "model": served,
                            "max_tokens": 4,
                            "messages": [{"role": "user", "content": "hi"}],
                        },
                    )
                assert chat.status_code == 200, chat.text
                later = await feed.next(LogsEvent, lambda e: count(e) > logs.next, 30)
                newer = await client.instance_logs(started, since=logs.next, limit=5000)
                assert newer.lines and newer.next >= count(later) > logs.next
            finally:
                await client.stop_instance(started)

    asyncio.run(main())
