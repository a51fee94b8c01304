"""What the listeners' checks of each request cost the daemon: the Origin, Sec-Fetch-Site,
Content-Type and body-size checks (request_guard.RequestGuard) and the key check
(security.KeyGuard, a key set and sent), side by side with the same app without them.

Two servers run the daemon's own app (create_app, with the uvicorn configuration the daemon
uses, on uvloop), one of them with those two middlewares taken out, each in a thread of its
own, so the CPU each spends is read per thread. The same requests an OpenAI client sends go
to both in alternating rounds over real loopback sockets: a model listing, and a chat
request the gateway answers itself (no model named), so no engine's time is counted."""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import httpx
import psutil
import pytest
import uvicorn
from fastapi import FastAPI

from roundhouse.api.settings import Settings
from roundhouse.core.gateway.key import generate_key
from roundhouse.core.infra.ports import bind_listener
from roundhouse.server import event_loop
from roundhouse.server.app import create_app
from roundhouse.server.http_limits import listener_config
from roundhouse.server.request_guard import RequestGuard
from roundhouse.server.security import KeyGuard
from roundhouse.server.services import DaemonServices

ROUNDS = 8
REQUESTS_PER_ROUND = 2500
BUDGET_MS = 0.1
KEY = generate_key()
# What the openai package sends with every request (its own headers, values typical).
OPENAI_HEADERS = {
    "accept": "application/json",
    "content-type": "application/json",
    "user-agent": "OpenAI/Python 1.99.0",
    "x-stainless-lang": "python",
    "x-stainless-package-version": "1.99.0",
    "x-stainless-os": "Linux",
    "x-stainless-arch": "x64",
    "x-stainless-runtime": "CPython",
    "x-stainless-runtime-version": "3.11.9",
    "x-stainless-async": "false",
    "x-stainless-retry-count": "0",
    "x-stainless-read-timeout": "600",
    "authorization": f"Bearer {KEY}",
}
CHAT = b'{"messages":[{"role":"user","content":"Say hello."}],"max_tokens":16}'


class _Gateway:
    """The gateway's answers with no instance: an empty list of models."""

    async def refresh_externals(self, max_age_s: float) -> None:
        return None

    def listed(self) -> list[Any]:
        return []


def _services() -> DaemonServices:
    gateway = _Gateway()
    return cast(
        DaemonServices,
        SimpleNamespace(
            version="perf",
            settings=Settings(),
            token="daemon-token",
            gateway_key=SimpleNamespace(current=KEY, is_set=True),
            gateway=gateway,
        ),
    )


def _app(checks: bool) -> FastAPI:
    app = create_app(_services())
    if not checks:
        # Taken out before the first request builds the middleware stack.
        app.user_middleware = [
            m for m in app.user_middleware if m.cls not in (RequestGuard, KeyGuard)
        ]
    return app


class _Served:
    """The app under uvicorn on a thread of its own; `cpu_s()` is that thread's CPU time."""

    def __init__(self, app: FastAPI) -> None:
        sock = bind_listener("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = uvicorn.Server(listener_config(app, "127.0.0.1"))
        self._native_id: int | None = None

        def run() -> None:
            self._native_id = threading.get_native_id()
            event_loop.run(self.server.serve(sockets=[sock]))

        self.thread = threading.Thread(target=run, name="perf-server", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)

    def cpu_s(self) -> float:
        for thread in psutil.Process().threads():
            if thread.id == self._native_id:
                return float(thread.user_time + thread.system_time)
        raise AssertionError("the server's thread is gone")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, _Served]]:
    served = {"checks_on": _Served(_app(True)), "checks_off": _Served(_app(False))}
    try:
        yield served
    finally:
        for server in served.values():
            server.stop()


def _round(http: httpx.Client, server: _Served) -> float:
    """Server CPU per request, in ms, over one round of alternating list and chat requests."""
    before = server.cpu_s()
    for i in range(REQUESTS_PER_ROUND):
        if i % 2:
            reply = http.post(server.url + "/v1/chat/completions", content=CHAT)
            assert reply.status_code == 400, reply.text  # the gateway's own: no model named
        else:
            assert http.get(server.url + "/v1/models").status_code == 200
    return 1000 * (server.cpu_s() - before) / REQUESTS_PER_ROUND


@pytest.mark.perf
def test_the_checks_cost_under_a_tenth_of_a_millisecond(
    servers: dict[str, _Served], report: Any
) -> None:
    per_request: dict[str, list[float]] = {name: [] for name in servers}
    with httpx.Client(trust_env=False, headers=OPENAI_HEADERS, timeout=10) as http:
        # Both guarded paths answer as the daemon would: a foreign page is refused.
        refused = http.get(servers["checks_on"].url + "/v1/models", headers={"origin": "x://y"})
        assert refused.status_code == 403
        for server in servers.values():  # warm both (imports, first stack build)
            _round(http, server)
        for round_no in range(ROUNDS):
            order = list(servers.items())
            # Alternated, so drift on a busy machine hits both alike.
            for name, server in order if round_no % 2 == 0 else order[::-1]:
                per_request[name].append(_round(http, server))
    on = statistics.median(per_request["checks_on"])
    off = statistics.median(per_request["checks_off"])
    added = on - off
    report.add("rounds", ROUNDS)
    report.add("requests_per_round", REQUESTS_PER_ROUND)
    report.add("cpu_ms_per_request_checks_on_median", round(on, 4))
    report.add("cpu_ms_per_request_checks_off_median", round(off, 4))
    report.add("added_cpu_ms_per_request", round(added, 4))
    report.add("rounds_on_ms", [round(v, 4) for v in per_request["checks_on"]])
    report.add("rounds_off_ms", [round(v, 4) for v in per_request["checks_off"]])
    report.add("budget", f"added <= {BUDGET_MS} ms of daemon CPU per request")
    assert added <= BUDGET_MS, per_request


@pytest.mark.perf
def test_the_checks_alone_in_process(report: Any) -> None:
    """The same two middlewares around an app that does nothing, called directly: their own
    cost with no server, parser or route around it (finer than the thread clock)."""

    async def nothing(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    services = _services()
    guarded = RequestGuard(
        KeyGuard(nothing, key=lambda: services.gateway_key.current, prefix="/v1"),
        origins=lambda: (),
        control_prefixes=("/api/v1", "/metrics"),
    )
    headers = [(k.encode(), v.encode()) for k, v in OPENAI_HEADERS.items()]
    headers += [(b"host", b"127.0.0.1:11500"), (b"content-length", b"%d" % len(CHAT))]
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
    }

    async def receive() -> Any:
        return {"type": "http.request", "body": CHAT, "more_body": False}

    async def send(message: Any) -> None:
        return None

    async def timed(app: Any, n: int) -> float:
        started = time.process_time()
        for _ in range(n):
            await app(scope, receive, send)
        return 1e6 * (time.process_time() - started) / n

    async def main() -> dict[str, list[float]]:
        runs: dict[str, list[float]] = {"on": [], "off": []}
        for _ in range(ROUNDS):
            runs["on"].append(await timed(guarded, 20000))
            runs["off"].append(await timed(nothing, 20000))
        return runs

    runs = asyncio.run(main())
    added_us = statistics.median(runs["on"]) - statistics.median(runs["off"])
    report.add("added_cpu_us_per_request_in_process", round(added_us, 2))
    report.add("budget", f"<= {1000 * BUDGET_MS:g} us")
    assert added_us <= 1000 * BUDGET_MS
