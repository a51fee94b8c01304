"""The change feed's route in process: SSE fields (id the seq, event the kind), the resume
point (`Last-Event-ID` over `since`), a keep-alive comment while quiet, and the end of the
stream when the daemon begins to stop."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import fastapi.routing
import httpx
import pytest
from fastapi import FastAPI

from roundhouse.api.events import ResetEvent, ResetReason, SettingsEvent, parse_event
from roundhouse.api.settings import Settings
from roundhouse.server.feed_wiring import ChangeFeed
from roundhouse.server.problems import install_problem_handlers
from roundhouse.server.routes.events import resume_point, router


def _settings(port: int) -> Settings:
    return Settings.model_validate({"daemon": {"port": port}})


def _app(feed: ChangeFeed, stopping: asyncio.Event) -> FastAPI:
    app = FastAPI()
    app.state.services = SimpleNamespace(feed=feed, stopping=stopping)
    app.include_router(router)
    return app


async def _messages(
    app: FastAPI,
    *,
    stop_after_s: float = 0.5,
    headers: dict[str, str] | None = None,
    query: str = "",
) -> list[list[str]]:
    """Every message (comments included), each as its lines, of a stream the daemon stops
    after `stop_after_s` (in process, httpx reads the response once the app has ended it)."""
    asyncio.get_running_loop().call_later(stop_after_s, app.state.services.stopping.set)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await asyncio.wait_for(
            client.get("/events" + query, headers=headers or {}), stop_after_s + 5
        )
    assert response.status_code == 200
    return [block.splitlines() for block in response.text.split("\n\n") if block]


def _field(message: list[str], name: str) -> str:
    return next(line[len(name) + 2 :] for line in message if line.startswith(name + ": "))


def test_each_message_has_the_seq_as_id_and_the_kind_as_event() -> None:
    async def main() -> None:
        feed = ChangeFeed()
        first = feed.feed.publish("settings", _settings(1))
        second = feed.feed.publish("settings", _settings(2))
        assert first is not None and second is not None
        (message,) = await _messages(_app(feed, asyncio.Event()), query=f"?since={first.seq}")
        assert (_field(message, "id"), _field(message, "event")) == (str(second.seq), "settings")
        event = parse_event(_field(message, "data"))
        assert isinstance(event, SettingsEvent) and event.data == _settings(2)

    asyncio.run(main())


def test_last_event_id_wins_over_since() -> None:
    assert resume_point("12", 5) == 12
    assert resume_point(None, 5) == 5
    assert resume_point(" ", None) is None
    assert resume_point("x", 5) == -1  # a reset (unknown), not the `since` of an old URL

    async def main() -> None:
        feed = ChangeFeed()
        published = [feed.feed.publish("settings", _settings(n)) for n in range(1, 4)]
        seqs = [p.seq for p in published if p is not None]
        # An EventSource reconnects with its first URL (?since=) and the newest id it saw.
        (message,) = await _messages(
            _app(feed, asyncio.Event()),
            headers={"Last-Event-ID": str(seqs[1])},
            query=f"?since={seqs[0] - 1}",
        )
        assert _field(message, "id") == str(seqs[2])

    asyncio.run(main())


def test_a_quiet_stream_sends_keep_alive_comments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastapi.routing, "_PING_INTERVAL", 0.2)

    async def main() -> None:
        feed = ChangeFeed()
        reset, *pings = await _messages(_app(feed, asyncio.Event()), stop_after_s=0.7)
        event = parse_event(_field(reset, "data"))
        assert isinstance(event, ResetEvent) and event.reason is ResetReason.NEW
        assert pings and all(ping == [": ping"] for ping in pings)

    asyncio.run(main())


def test_the_stream_ends_when_the_daemon_begins_to_stop() -> None:
    async def main() -> None:
        feed = ChangeFeed()
        started = time.monotonic()
        messages = await _messages(_app(feed, asyncio.Event()), stop_after_s=0.3)
        assert len(messages) == 1 and time.monotonic() - started < 3

    asyncio.run(main())


def test_only_the_kinds_asked_come_and_an_unknown_kind_is_refused_before_any_stream() -> None:
    async def run() -> None:
        feed = ChangeFeed()
        feed.settings_saved(_settings(1234))
        app = _app(feed, asyncio.Event())
        install_problem_handlers(app)
        messages = await _messages(app, query="?kinds=instances")
        # The reset always comes; the settings event does not, it was not asked for.
        kinds = [line for m in messages for line in m if line.startswith("event:")]
        assert kinds == ["event: reset"]
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            refused = await client.get("/events?kinds=instances,chats")
        assert refused.status_code == 422
        assert "Unknown event kind 'chats'" in refused.json()["detail"]

    asyncio.run(run())
