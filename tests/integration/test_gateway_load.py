"""No request lost under load: many concurrent requests, streamed and not, through the
gateway to the real llama-server, whose kept-alive connections end under the daemon's
feet (cpp-httplib closes one after a few requests); every one is answered in full."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceInfo, StartRequest
from tests.daemon_process import DaemonProcess, path_with, start_daemon, start_ready

READY_TIMEOUT_S = 60.0
STREAMS = 16
REQUESTS = 120
# The whole run: a few seconds with the tiny model, on one engine thread.
RUN_TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def served(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DaemonProcess, InstanceInfo]]:
    daemon = start_daemon(
        tmp_path_factory.mktemp("load") / "home", env=path_with(llama_server_binary)
    )
    request = StartRequest(
        engine=EngineId.LLAMA_CPP,
        # One thread, so the test leaves the machine a core; a few slots, so requests run
        # side by side and connections are kept alive and reused at once.
        options=InstanceOptions(model=str(tiny_gguf), ctx_size=1024, parallel=4, threads=1),
    )
    try:
        yield daemon, asyncio.run(start_ready(daemon, request, READY_TIMEOUT_S))
    finally:
        if daemon.process.poll() is None:
            daemon.stop(timeout=60)


async def _one(client: httpx.AsyncClient, model: str, n: int) -> str | None:
    """Request number `n` (chat or completions, streamed or not, in turn): None when it
    was answered in full, else what went wrong."""
    stream = n % 2 == 0
    if n % 4 < 2:
        path = "/v1/chat/completions"
        body: dict[str, object] = {"messages": [{"role": "user", "content": f"Count to {n}"}]}
    else:
        path = "/v1/completions"
        body = {"prompt": f"Once upon a time {n}"}
    body |= {"model": model, "max_tokens": 4, "stream": stream}
    try:
        if not stream:
            reply = await client.post(path, json=body)
            if reply.status_code != 200:
                return f"{path} {reply.status_code}: {reply.text[:300]}"
            json.loads(reply.content)
            return None
        async with client.stream("POST", path, json=body) as streamed:
            text = (await streamed.aread()).decode()
            if streamed.status_code != 200:
                return f"{path} (streamed) {streamed.status_code}: {text[:300]}"
            if "data: [DONE]" not in text:
                return f"{path} (streamed) ended without [DONE]: {text[-300:]}"
            return None
    except httpx.HTTPError as exc:
        return f"{path} {'(streamed) ' if stream else ''}{exc.__class__.__name__}: {exc}"


def test_no_request_is_lost_under_load(served: tuple[DaemonProcess, InstanceInfo]) -> None:
    daemon, info = served
    numbers = iter(range(REQUESTS))
    failures: list[str] = []

    async def worker(client: httpx.AsyncClient) -> None:
        for n in numbers:
            if (failure := await _one(client, info.models[0], n)) is not None:
                failures.append(failure)

    async def main() -> None:
        limits = httpx.Limits(max_connections=STREAMS, max_keepalive_connections=STREAMS)
        async with httpx.AsyncClient(
            base_url=daemon.url, trust_env=False, timeout=60, limits=limits
        ) as client:
            await asyncio.wait_for(
                asyncio.gather(*(worker(client) for _ in range(STREAMS))), RUN_TIMEOUT_S
            )

    start = time.monotonic()
    asyncio.run(main())
    elapsed = time.monotonic() - start
    assert not failures, f"{len(failures)} of {REQUESTS} requests lost:\n" + "\n".join(failures)
    assert elapsed < RUN_TIMEOUT_S
