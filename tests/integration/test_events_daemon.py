"""The change feed through a real daemon and the real llama-server on the tiny model: an
instance's start shows as instances events up to ready and as a gateway event serving it;
a saved setting as a settings event; an import and a delete as library events, and the
gateway's list follows them and a saved preset; a follower resumes after the last event it
saw, with the same events; `roundhouse events` prints them (lines, or JSON) and ends when
the daemon stops."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import aclosing
from pathlib import Path
from typing import TypeVar

import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.events import (
    FeedEvent,
    GatewayEvent,
    InstancesEvent,
    LibraryEvent,
    ResetEvent,
    ResetReason,
    SettingsEvent,
    parse_event,
)
from roundhouse.api.gateway import ModelState
from roundhouse.api.instances import InstanceStatus, Preset, StartRequest
from roundhouse.api.library import ImportRequest
from roundhouse.client import DaemonClient
from tests.daemon_process import DaemonProcess, path_with, running_daemon, start_daemon

pytestmark = pytest.mark.timeout(300)

READY_TIMEOUT_S = 90.0
# How long an event may take to come: bounds for a loaded machine, not a goal (the
# library reads a file's header before it lists it).
WAIT_S = 30.0

E = TypeVar("E", LibraryEvent, GatewayEvent)


@pytest.fixture(scope="module")
def daemon(
    llama_server_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DaemonProcess]:
    root = tmp_path_factory.mktemp("events") / "home"
    with running_daemon(root, env=path_with(llama_server_binary)) as running:
        yield running


async def _until(
    events: list[FeedEvent],
    stream: DaemonClient,
    since: int | None,
    done: Callable[[list[FeedEvent]], bool],
    timeout_s: float,
) -> None:
    async def follow() -> None:
        async for event in stream.events(since):
            events.append(event)
            if done(events):
                return

    await asyncio.wait_for(follow(), timeout_s)


def _instances(events: list[FeedEvent], instance_id: str) -> list[InstanceStatus]:
    """The statuses the instance showed in the instances events, in order."""
    return [
        i.status
        for e in events
        if isinstance(e, InstancesEvent)
        for i in e.data.instances
        if i.id == instance_id
    ]


def test_a_start_and_a_saved_setting_show_as_events_and_a_follower_resumes(
    daemon: DaemonProcess, tiny_gguf: Path
) -> None:
    async def main() -> None:
        async with (
            DaemonClient(daemon.url, daemon.token) as client,
            DaemonClient(daemon.url, daemon.token) as stream,
        ):
            seen: list[FeedEvent] = []
            started: list[str] = []
            following = asyncio.Event()

            def ready(events: list[FeedEvent]) -> bool:
                following.set()
                return bool(started) and InstanceStatus.READY in _instances(events, started[0])

            async def start() -> None:
                # After the stream's reset, so the start's events come after it.
                await following.wait()
                request = StartRequest(
                    engine=EngineId.LLAMA_CPP,
                    options=InstanceOptions(model=str(tiny_gguf), ctx_size=512),
                )
                started.append((await client.start_instance(request)).id)

            await asyncio.gather(_until(seen, stream, None, ready, READY_TIMEOUT_S), start())
            reset = seen[0]
            assert isinstance(reset, ResetEvent) and reset.reason is ResetReason.NEW
            seqs = [e.seq for e in seen]
            assert seqs == sorted(set(seqs)) and seqs[1] == reset.seq + 1
            # States are whole and coalesced (at most 4 a second): a load quicker than that
            # may show as ready at once, but never out of the lifecycle's order.
            statuses = _instances(seen, started[0])
            lifecycle = [InstanceStatus.STARTING, InstanceStatus.LOADING, InstanceStatus.READY]
            assert all(s in lifecycle for s in statuses), statuses
            assert statuses == sorted(statuses, key=lifecycle.index), statuses
            assert statuses[-1] is InstanceStatus.READY

            # The gateway's list follows: it serves the model (published at most 0.25 s on).
            last = seen[-1].seq
            gateway: list[FeedEvent] = []

            def serving(events: list[FeedEvent]) -> bool:
                return any(
                    isinstance(e, GatewayEvent)
                    and any(
                        m.instance == started[0] and m.state is ModelState.SERVING
                        for m in e.data.models
                    )
                    for e in events
                )

            await _until(gateway, stream, reset.seq, serving, 10)

            # A saved setting: one settings event with what was saved.
            settings = await client.settings()
            changed = settings.model_copy(
                update={"chat": settings.chat.model_copy(update={"max_conversations": 321})}
            )
            after: list[FeedEvent] = []

            def saved(events: list[FeedEvent]) -> bool:
                return any(isinstance(e, SettingsEvent) for e in events)

            await asyncio.gather(
                _until(after, stream, last, saved, 10), client.put_settings(changed)
            )
            (event,) = [e for e in after if isinstance(e, SettingsEvent)]
            assert event.data.chat.max_conversations == 321

            # Resuming after an event replays exactly the events after it, numbers and all.
            middle = seen[len(seen) // 2]
            replay: list[FeedEvent] = []
            await _until(replay, stream, middle.seq, lambda e: e[-1].seq >= last, 10)
            assert not any(isinstance(e, ResetEvent) for e in replay)
            expected = [e for e in seen if e.seq > middle.seq]
            assert replay[: len(expected)] == expected

            await client.stop_instance(started[0])

    asyncio.run(main())


def test_an_import_a_delete_and_a_preset_show_as_library_and_gateway_events(
    daemon: DaemonProcess, tiny_gguf: Path
) -> None:
    async def main() -> None:
        async with (
            DaemonClient(daemon.url, daemon.token) as client,
            DaemonClient(daemon.url, daemon.token) as stream,
        ):
            async with aclosing(stream.events()) as first:
                since = (await anext(first)).seq

            async def next_event(kind: type[E], where: Callable[[E], bool]) -> E:
                nonlocal since
                async with aclosing(stream.events(since)) as events:
                    async for event in events:
                        since = event.seq
                        if isinstance(event, kind) and where(event):
                            return event
                raise AssertionError("the feed ended")

            before_import = since
            imported = await client.import_gguf(ImportRequest(path=str(tiny_gguf)))
            listed = await asyncio.wait_for(
                next_event(LibraryEvent, lambda e: any(m.id == imported.id for m in e.data.models)),
                WAIT_S,
            )
            assert imported.served_id is not None
            # The gateway's event may come before the library's: look from the import on.
            since = before_import
            await asyncio.wait_for(
                next_event(
                    GatewayEvent,
                    lambda e: any(m.id == imported.served_id for m in e.data.models),
                ),
                WAIT_S,
            )
            await client.save_preset(
                Preset(
                    engine=EngineId.LLAMA_CPP,
                    model=str(tiny_gguf),
                    name="events-preset",
                    options=InstanceOptions(ctx_size=256),
                )
            )
            await asyncio.wait_for(
                next_event(
                    GatewayEvent, lambda e: any(m.preset == "events-preset" for m in e.data.models)
                ),
                WAIT_S,
            )
            await client.delete_library_model(imported.id)
            gone = await asyncio.wait_for(
                next_event(LibraryEvent, lambda e: all(m.id != imported.id for m in e.data.models)),
                WAIT_S,
            )
            assert gone.seq > listed.seq

    asyncio.run(main())


def _roundhouse(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "roundhouse", "--home", str(home), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200", "PYTHONUNBUFFERED": "1"},
    )


def _read_line(process: subprocess.Popen[str], timeout_s: float = 20) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    line = ""
    while not line and time.monotonic() < deadline:
        line = process.stdout.readline()
    assert line, "the command printed nothing"
    return line.rstrip("\n")


def _read_kind(process: subprocess.Popen[str], kind: str, text: bool) -> str:
    """The first line of `kind` (one the daemon published meanwhile, like the library's
    first scan, may come before it)."""
    for _ in range(20):
        line = _read_line(process)
        found = line.split()[2] if text else json.loads(line)["kind"]
        if found == kind:
            return line
    raise AssertionError(f"no {kind} event in 20 lines")


def test_roundhouse_events_prints_each_event_and_ends_when_the_daemon_stops(
    tmp_path: Path,
) -> None:
    daemon = start_daemon(tmp_path / "home")
    root = daemon.home.root
    assert root is not None
    try:
        lines = _roundhouse(root, "events")
        raw = _roundhouse(root, "events", "--json")
        first = _read_line(lines)
        assert " reset " in first and "everything as it is now" in first
        reset = parse_event(_read_line(raw))
        assert isinstance(reset, ResetEvent)
        with daemon.control() as control:
            settings = control.get("/api/v1/settings").json()
            settings["chat"]["max_conversations"] = 77
            assert control.put("/api/v1/settings", json=settings).status_code == 200
        line = _read_kind(lines, "settings", text=True)
        assert line.split()[2] == "settings" and "chat.max_conversations = 77" in line
        saved = parse_event(_read_kind(raw, "settings", text=False))
        assert isinstance(saved, SettingsEvent) and saved.data.chat.max_conversations == 77
        assert saved.seq == int(line.split()[0])

        # Resuming before that event prints it again, with no reset.
        again = _roundhouse(root, "events", "--json", "--since", str(saved.seq - 1))
        assert json.loads(_read_line(again))["seq"] == saved.seq

        stopped_at = time.monotonic()
        assert daemon.stop(timeout=30) == 0
        for process in (lines, raw, again):
            assert process.wait(timeout=15) == 0
        assert time.monotonic() - stopped_at < 15
        assert lines.stdout is not None and "The daemon stopped." in lines.stdout.read()
    finally:
        if daemon.process.poll() is None:
            daemon.stop(timeout=30)
