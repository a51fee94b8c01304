"""A client gone mid-stream stops the engine: the daemon closes its connection to the real
llama-server at once, the engine's slot is freed, and the next request is answered."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psutil
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceInfo, StartRequest
from tests.daemon_process import DaemonProcess, path_with, start_daemon, start_ready

READY_TIMEOUT_S = 60.0
# How long the daemon may take to close the engine's connection after the client left.
PROMPT_CLOSE_S = 1.0


async def _start_ready(daemon: DaemonProcess, model: Path) -> InstanceInfo:
    request = StartRequest(
        engine=EngineId.LLAMA_CPP,
        # One slot, so a generation left running would hold up the next request; one
        # thread, so the test leaves the machine a core. Context shift lets the
        # generation go on past the small context: it runs until stopped.
        options=InstanceOptions(
            model=str(model),
            ctx_size=512,
            parallel=1,
            threads=1,
            extra_args=("--context-shift",),
        ),
    )
    return await start_ready(daemon, request, READY_TIMEOUT_S)


@pytest.fixture(scope="module")
def served(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DaemonProcess, InstanceInfo]]:
    daemon = start_daemon(
        tmp_path_factory.mktemp("disconnect") / "home", env=path_with(llama_server_binary)
    )
    try:
        yield daemon, asyncio.run(_start_ready(daemon, tiny_gguf))
    finally:
        if daemon.process.poll() is None:
            daemon.stop(timeout=60)


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


def _until(condition: object, timeout_s: float) -> float | None:
    """Seconds until `condition()` held, or None when it did not within `timeout_s`."""
    assert callable(condition)
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if condition():
            return time.monotonic() - start
        time.sleep(0.02)
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
