"""Failover between real llama-servers: a prompt too long for a model's context goes down
its fallback chain; of two instances serving one model, one
SIGKILLed while requests stream ends its own streams with an error that names it, new
requests go to the other with no error, and its circuit opens, then closes once it is back."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from roundhouse.api.gateway import CircuitState, GatewayRoutes
from roundhouse.api.instances import InstanceInfo
from roundhouse.api.settings import GatewaySettings
from roundhouse.client.client import DaemonClient
from tests.daemon_process import DaemonProcess, path_with
from tests.support.serving import llama_cpp, serving

READY_TIMEOUT_S = 60.0
# Context shift off: a prompt longer than the context is refused, not shifted.
NO_SHIFT = ("--no-context-shift",)


@pytest.fixture(scope="module")
def served(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DaemonProcess, list[InstanceInfo]]]:
    root = tmp_path_factory.mktemp("failover") / "home"
    # Other files: an instance also serves its file's name, and these must not be `tiny`.
    small_gguf, long_gguf = root.parent / "tiny-small.gguf", root.parent / "tiny-long.gguf"
    for copy in (small_gguf, long_gguf):
        shutil.copyfile(tiny_gguf, copy)
    # Two instances of `tiny` that generate for as long as asked (context shift on), with a
    # slot to spare beside two endless streams; and
    # `tiny-small`, whose context a long prompt does not fit, falling back on `tiny-long`;
    # one thread each, so the test leaves the machine a core.
    endless = {"ctx_size": 1024, "parallel": 4, "threads": 1, "extra_args": ("--context-shift",)}
    requests = [
        llama_cpp(tiny_gguf, served_name="tiny", **endless),
        llama_cpp(tiny_gguf, served_name="tiny", **endless),
        llama_cpp(
            small_gguf, served_name="tiny-small", ctx_size=256, threads=1, extra_args=NO_SHIFT
        ),
        llama_cpp(
            long_gguf, served_name="tiny-long", ctx_size=4096, threads=1, extra_args=NO_SHIFT
        ),
    ]
    env = path_with(llama_server_binary)
    with serving(root, *requests, env=env, ready_timeout_s=READY_TIMEOUT_S) as (daemon, infos):
        _configure(
            daemon,
            fallbacks={"tiny-small": ["tiny-long"]},
            circuit_failures=1,
            circuit_backoff_s=0.2,
            circuit_backoff_max_s=1.0,
        )
        yield daemon, infos


def _configure(daemon: DaemonProcess, **gateway: Any) -> None:
    async def put() -> None:
        async with DaemonClient(daemon.url, daemon.token) as client:
            settings = await client.settings()
            new = GatewaySettings(**{**settings.gateway.model_dump(), **gateway})
            await client.put_settings(settings.model_copy(update={"gateway": new}))

    asyncio.run(put())


def _routes(daemon: DaemonProcess) -> GatewayRoutes:
    async def read() -> GatewayRoutes:
        async with DaemonClient(daemon.url, daemon.token) as client:
            return await client.gateway_routes()

    return asyncio.run(read())


def _circuit(daemon: DaemonProcess, model: str, instance_id: str) -> CircuitState | None:
    for route in _routes(daemon).routes:
        if route.model == model:
            for entry in route.instances:
                if entry.instance == instance_id:
                    return entry.circuit
    return None


def _client(daemon: DaemonProcess) -> OpenAI:
    return OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def test_a_prompt_too_long_for_the_context_goes_down_the_fallback_chain(
    served: tuple[DaemonProcess, list[InstanceInfo]],
) -> None:
    daemon, [_a, _b, _small, long] = served
    client = _client(daemon)
    # About 1200 tokens: more than tiny-small's 256, less than tiny-long's 4096.
    prompt = " ".join(["hello"] * 400)
    reply = client.completions.with_raw_response.create(
        model="tiny-small", prompt=prompt, max_tokens=4, temperature=0
    )
    assert reply.http_response.status_code == 200
    assert reply.headers["x-roundhouse-instance"] == long.id
    assert reply.headers["x-roundhouse-model"] == "tiny-long"
    assert reply.headers["x-roundhouse-model-via"] == "fallback"
    assert reply.parse().usage is not None and reply.parse().usage.completion_tokens > 0
    # A short one stays on tiny-small.
    short = client.completions.with_raw_response.create(
        model="tiny-small", prompt="Hi", max_tokens=2
    )
    assert short.headers["x-roundhouse-model"] == "tiny-small"
    # Without the chain, the context's refusal is said as before (400, with the numbers).
    _configure(daemon, fallbacks={})
    try:
        with pytest.raises(openai.BadRequestError, match="context"):
            client.completions.create(model="tiny-small", prompt=prompt, max_tokens=4)
    finally:
        _configure(daemon, fallbacks={"tiny-small": ["tiny-long"]})


def _endless(client: OpenAI) -> Any:
    return client.completions.create(
        model="tiny",
        prompt="Once upon a time",
        max_tokens=100_000,
        stream=True,
        extra_body={"ignore_eos": True},
    )


def test_a_killed_instance_ends_its_streams_clearly_and_new_requests_go_to_the_other(
    served: tuple[DaemonProcess, list[InstanceInfo]],
) -> None:
    daemon, [a, b, _small, _long] = served
    client = _client(daemon)
    streams = [_endless(client) for _ in range(4)]
    on: dict[str, list[Any]] = {a.id: [], b.id: []}
    for stream in streams:
        on[stream.response.headers["x-roundhouse-instance"]].append(stream)
        assert next(iter(stream)) is not None
    # The least busy instance takes each: two streams on each.
    assert [len(on[a.id]), len(on[b.id])] == [2, 2]

    assert a.pid is not None
    os.kill(a.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    # New requests right away: every one answered, by the other instance.
    for _ in range(5):
        reply = client.completions.with_raw_response.create(model="tiny", prompt="Hi", max_tokens=2)
        assert reply.http_response.status_code == 200
        assert reply.headers["x-roundhouse-instance"] == b.id
    served_in = time.monotonic() - killed_at
    assert served_in < 10

    # Its streams end with an error that names it and says a retry goes elsewhere.
    for stream in on[a.id]:
        with pytest.raises(openai.APIError) as broke:
            for _ in stream:
                pass
        assert a.id in broke.value.message and "another instance" in broke.value.message
    # The other's go on.
    for stream in on[b.id]:
        for _, _chunk in zip(range(20), stream, strict=False):
            pass
        stream.close()

    assert _until(lambda: _circuit(daemon, "tiny", a.id) == CircuitState.OPEN, 10)

    # Back again (restarted): a health check half-opens its circuit, a request closes it.
    async def restart() -> None:
        async with DaemonClient(daemon.url, daemon.token) as control:
            await control.restart_instance(a.id)

    asyncio.run(restart())

    def closed_again() -> bool:
        client.completions.create(model="tiny", prompt="Hi", max_tokens=2)
        return _circuit(daemon, "tiny", a.id) == CircuitState.CLOSED

    assert _until(closed_again, 60, every_s=0.2), _routes(daemon)


def _until(condition: Any, timeout_s: float, every_s: float = 0.05) -> bool:
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if condition():
            return True
        time.sleep(every_s)
    return False
