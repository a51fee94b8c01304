"""A client gone mid-stream, while queued or before a whole reply stops the engine: the
daemon closes its connection to the real llama-server at once, the engine's slot and the
gateway's are freed, and the next request is answered."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psutil
import pytest

from roundhouse.api.gateway import InstanceUsage
from roundhouse.api.instances import InstanceInfo
from roundhouse.api.settings import GatewaySettings
from roundhouse.client.client import DaemonClient
from tests.daemon_process import DaemonProcess, path_with
from tests.support.serving import llama_cpp, serving

READY_TIMEOUT_S = 60.0
# How long the daemon may take to close the engine's connection after the client left.
PROMPT_CLOSE_S = 1.0


@pytest.fixture(scope="module")
def served(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DaemonProcess, InstanceInfo]]:
    root = tmp_path_factory.mktemp("disconnect") / "home"
    # One slot, so a generation left running would hold up the next request; one thread,
    # so the test leaves the machine a core. Context shift lets the generation go on past
    # the small context: it runs until stopped.
    request = llama_cpp(
        tiny_gguf, ctx_size=512, parallel=1, threads=1, extra_args=("--context-shift",)
    )
    env = path_with(llama_server_binary)
    with serving(root, request, env=env, ready_timeout_s=READY_TIMEOUT_S) as (daemon, [info]):
        yield daemon, info


def _to_engine(daemon: DaemonProcess, port: int) -> set[int]:
    """Local ports of the daemon's established TCP connections to the engine's port."""
    return {
        c.laddr.port
        for c in psutil.Process(daemon.process.pid).net_connections(kind="tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    }


def _generating(engine: httpx.Client) -> bool:
    slots = engine.get("/slots").raise_for_status().json()
    return any(slot["is_processing"] for slot in slots)


def _until(condition: object, timeout_s: float, every_s: float = 0.02) -> float | None:
    """Seconds until `condition()` held, or None when it did not within `timeout_s`."""
    assert callable(condition)
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if condition():
            return time.monotonic() - start
        time.sleep(every_s)
    return None


def test_a_client_gone_mid_stream_stops_the_engine(
    served: tuple[DaemonProcess, InstanceInfo],
) -> None:
    daemon, info = served
    address = urlsplit(info.base_url)
    port = address.port
    assert port is not None
    body = {
        "model": info.models[0],
        "prompt": "Once upon a time",
        "max_tokens": 200_000,  # minutes of tokens: only a close can end it in time
        "ignore_eos": True,
        "stream": True,
    }
    with (
        # The test reads the engine's /slots as its owner does: with the instance's key.
        httpx.Client(
            base_url=f"http://{address.netloc}",
            headers=daemon.engine_headers(info.id),
            trust_env=False,
            timeout=10,
        ) as engine,
        httpx.Client(base_url=daemon.url, trust_env=False, timeout=30) as client,
    ):
        with client.stream("POST", "/v1/completions", json=body) as reply:
            assert reply.status_code == 200
            events = reply.iter_raw()
            for _ in range(5):
                assert next(events)
            # While it streams, the engine generates over a connection from the daemon.
            streaming = _to_engine(daemon, port)
            assert streaming, "no connection from the daemon to the engine while streaming"
            assert _generating(engine)
        # Leaving the block closed the client's connection mid-stream.
        closed_in = _until(lambda: not (_to_engine(daemon, port) & streaming), PROMPT_CLOSE_S)
        assert closed_in is not None, (
            f"the daemon still holds its connection to the engine {PROMPT_CLOSE_S} s after "
            "the client left"
        )
        assert _until(lambda: not _generating(engine), PROMPT_CLOSE_S) is not None, (
            "the engine still generates for a client that left"
        )

        # The one slot is free: the next request is answered at once.
        start = time.monotonic()
        answer = client.post(
            "/v1/completions",
            json={"model": info.models[0], "prompt": "Hi", "max_tokens": 4},
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["usage"]["completion_tokens"] > 0
        assert time.monotonic() - start < 5.0


def _usage(daemon: DaemonProcess, instance_id: str) -> InstanceUsage:
    async def read() -> InstanceUsage:
        async with DaemonClient(daemon.url, daemon.token) as client:
            report = await client.gateway_usage()
        return next(u for u in report.usage if u.instance == instance_id)

    return asyncio.run(read())


def _configure(daemon: DaemonProcess, **gateway: Any) -> None:
    async def put() -> None:
        async with DaemonClient(daemon.url, daemon.token) as client:
            settings = await client.settings()
            new = GatewaySettings(**{**GatewaySettings().model_dump(), **gateway})
            await client.put_settings(settings.model_copy(update={"gateway": new}))

    asyncio.run(put())


def _send_and_keep(daemon: DaemonProcess, body: dict[str, Any]) -> socket.socket:
    """A client that sends one request to the gateway and reads nothing: closing the socket
    is leaving, exactly when the test says."""
    address = urlsplit(daemon.url)
    assert address.hostname is not None and address.port is not None
    payload = json.dumps(body).encode()
    sock = socket.create_connection((address.hostname, address.port), timeout=10)
    sock.sendall(
        b"POST /v1/completions HTTP/1.1\r\n"
        + f"Host: {address.netloc}\r\n".encode()
        + b"Content-Type: application/json\r\n"
        + f"Content-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    return sock


def _endless(model: str, *, stream: bool) -> dict[str, Any]:
    return {
        "model": model,
        "prompt": "Once upon a time",
        "max_tokens": 200_000,  # minutes of tokens: only a close can end it in time
        "ignore_eos": True,
        "stream": stream,
    }


def _engine(daemon: DaemonProcess, info: InstanceInfo) -> httpx.Client:
    return httpx.Client(
        base_url=f"http://{urlsplit(info.base_url).netloc}",
        headers=daemon.engine_headers(info.id),
        trust_env=False,
        timeout=10,
    )


def test_a_client_gone_while_queued_frees_its_place(
    served: tuple[DaemonProcess, InstanceInfo],
) -> None:
    daemon, info = served
    model = info.models[0]
    _configure(daemon, max_concurrent=1, queue_size=4, queue_timeout_s=60)
    try:
        with (
            _engine(daemon, info) as engine,
            httpx.Client(base_url=daemon.url, trust_env=False, timeout=30) as client,
        ):
            endless = _endless(model, stream=True)
            with client.stream("POST", "/v1/completions", json=endless) as held:
                assert held.status_code == 200
                # Kept: a raw iterator dropped closes the response, which is leaving.
                holding = held.iter_raw()
                assert next(holding)  # the one slot is taken
                # A client that would generate for minutes waits behind it, then leaves.
                queued = _send_and_keep(daemon, _endless(model, stream=False))
                assert _until(lambda: _usage(daemon, info.id).queued == 1, 5.0) is not None
                queued.close()
                left_in = _until(lambda: _usage(daemon, info.id).queued == 0, PROMPT_CLOSE_S)
                assert left_in is not None, "the request of a client that left is still queued"
            assert _until(lambda: not _generating(engine), PROMPT_CLOSE_S) is not None

            # The slot goes to the next request, not to the one whose client left.
            start = time.monotonic()
            answer = client.post(
                "/v1/completions", json={"model": model, "prompt": "Hi", "max_tokens": 4}
            )
            assert answer.status_code == 200, answer.text
            assert time.monotonic() - start < 5.0
            assert _usage(daemon, info.id).in_flight == 0
    finally:
        _configure(daemon)


def test_a_client_gone_before_a_whole_reply_stops_the_engine(
    served: tuple[DaemonProcess, InstanceInfo],
) -> None:
    daemon, info = served
    port = urlsplit(info.base_url).port
    assert port is not None
    with _engine(daemon, info) as engine:
        waiting = _send_and_keep(daemon, _endless(info.models[0], stream=False))
        try:
            assert _until(lambda: _generating(engine), 10.0) is not None
            sending = _to_engine(daemon, port)
            assert sending, "no connection from the daemon to the engine while it generates"
        finally:
            waiting.close()
        assert _until(lambda: not (_to_engine(daemon, port) & sending), PROMPT_CLOSE_S), (
            f"the daemon still holds its connection to the engine {PROMPT_CLOSE_S} s after "
            "the client left"
        )
        # llama-server looks at a whole reply's connection only after a second with no result
        # for any request, its /slots included: asked less often than that.
        stopped_in = _until(lambda: not _generating(engine), 5.0, every_s=1.5)
        assert stopped_in is not None, (
            "the engine still generates a whole reply for a client that left"
        )
        assert _usage(daemon, info.id).in_flight == 0
