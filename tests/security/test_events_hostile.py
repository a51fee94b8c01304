"""The change feed (`GET /api/v1/events`) against hostile requests, through a real daemon:
no token or a wrong one (401), a web page's Origin or Sec-Fetch-Site (403), a forged Host
(403, DNS rebinding), resume points no daemon sent (a reset, never a 500), and the log
route's bounds that a follower of the `logs` kind reads with; the same
request with the token from loopback gets the stream, so each refusal is the guard's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from roundhouse.api.events import ResetEvent, ResetReason, parse_event
from tests.daemon_process import DaemonProcess, running_daemon

EVENTS = "/api/v1/events"
EVIL = "https://evil.example"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    with running_daemon(tmp_path_factory.mktemp("events-hostile") / "home") as running:
        yield running


def _open(daemon: DaemonProcess, headers: dict[str, str], query: str = "") -> tuple[int, str, str]:
    """The status, content type and first message (or the body) of one request."""
    with (
        httpx.Client(base_url=daemon.url, trust_env=False, timeout=10) as client,
        client.stream("GET", EVENTS + query, headers=headers) as response,
    ):
        kind = response.headers.get("content-type", "")
        if not kind.startswith("text/event-stream"):
            return response.status_code, kind, response.read().decode()
        first = ""
        for line in response.iter_lines():
            if not line:
                break
            first += line + "\n"
        return response.status_code, kind, first


def _token(daemon: DaemonProcess) -> dict[str, str]:
    return {"Authorization": f"Bearer {daemon.token}"}


def _first_event(message: str) -> ResetEvent:
    data = next(line[len("data: ") :] for line in message.splitlines() if line.startswith("data: "))
    event = parse_event(data)
    assert isinstance(event, ResetEvent)
    assert f"id: {event.seq}\n" in message and "event: reset\n" in message
    return event


def test_with_the_token_from_loopback_the_stream_opens_with_a_reset(daemon: DaemonProcess) -> None:
    status, kind, message = _open(daemon, _token(daemon))
    assert (status, kind.split(";")[0]) == (200, "text/event-stream")
    assert _first_event(message).reason is ResetReason.NEW


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-the-token"}, {"Authorization": "Basic abc"}],
    ids=["no token", "wrong token", "another scheme"],
)
def test_without_the_token_nothing_streams(daemon: DaemonProcess, headers: dict[str, str]) -> None:
    status, kind, body = _open(daemon, headers)
    assert status == 401 and not kind.startswith("text/event-stream")
    assert "token" in body


@pytest.mark.parametrize(
    "extra",
    [{"Origin": EVIL}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}],
    ids=["foreign origin", "opaque origin", "another site's page"],
)
def test_a_web_page_is_refused_even_with_the_token(
    daemon: DaemonProcess, extra: dict[str, str]
) -> None:
    status, kind, _ = _open(daemon, {**_token(daemon), **extra})
    assert status == 403 and not kind.startswith("text/event-stream")


@pytest.mark.parametrize("host", ["evil.example", "rebind.localhost.evil.example", "10.0.0.1"])
def test_a_forged_host_is_refused(daemon: DaemonProcess, host: str) -> None:
    status, kind, body = _open(daemon, {**_token(daemon), "Host": host})
    assert status == 403 and not kind.startswith("text/event-stream")
    assert "host" in body.lower()


@pytest.mark.parametrize(
    "last_event_id",
    ["garbage", "-1", "9" * 400, "1e9", "12 34"],
    ids=["words", "negative", "huge", "float", "two numbers"],
)
def test_a_resume_point_no_daemon_sent_gets_a_reset_not_an_error(
    daemon: DaemonProcess, last_event_id: str
) -> None:
    status, _, message = _open(daemon, {**_token(daemon), "Last-Event-ID": last_event_id})
    assert status == 200
    assert _first_event(message).reason is ResetReason.UNKNOWN


@pytest.mark.parametrize("since", ["-5", "abc", "1.5"])
def test_a_malformed_since_is_refused_in_words(daemon: DaemonProcess, since: str) -> None:
    status, kind, body = _open(daemon, _token(daemon), f"?since={since}")
    assert status == 422 and kind.startswith("application/problem+json")
    assert "since" in body


@pytest.mark.parametrize("query", ["since=-1", "since=abc", "limit=0", "limit=5001"])
def test_the_log_routes_since_and_limit_the_log_window_follows_with_are_bounded(
    daemon: DaemonProcess, query: str
) -> None:
    """The log window reads new lines with `since` when the feed's `logs` count moves: a
    value out of bounds is refused in words, before any instance is looked up."""
    with httpx.Client(base_url=daemon.url, trust_env=False, timeout=10) as client:
        response = client.get(f"/api/v1/instances/abc/logs?{query}", headers=_token(daemon))
        refused = client.get(
            "/api/v1/instances/abc/logs?since=0", headers={**_token(daemon), "Origin": EVIL}
        )
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert query.split("=")[0] in response.text
    assert refused.status_code == 403, "a web page may not read an engine's output"


def test_the_hostile_requests_left_the_daemon_serving(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    assert daemon.process.poll() is None
    with daemon.control() as client:
        assert client.get("/api/v1/status").status_code == 200
