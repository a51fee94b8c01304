"""No request lost under load: many concurrent requests on every API surface (OpenAI chat
and completions, Anthropic Messages, OpenAI Responses, Ollama's chat), streamed and not,
through the gateway to the real llama-server, whose kept-alive connections end under the daemon's
feet (cpp-httplib closes one after a few requests); every one is answered in full."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from roundhouse.api.instances import InstanceInfo
from tests.daemon_process import DaemonProcess, path_with
from tests.support.serving import llama_cpp, serving

READY_TIMEOUT_S = 60.0
STREAMS = 16
REQUESTS = 150
# The whole run: a few seconds with the tiny model, on one engine thread.
RUN_TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def served(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DaemonProcess, InstanceInfo]]:
    root = tmp_path_factory.mktemp("load") / "home"
    # One thread, so the test leaves the machine a core; a few slots, so requests run side
    # by side and connections are kept alive and reused at once.
    request = llama_cpp(tiny_gguf, ctx_size=1024, parallel=4, threads=1)
    env = path_with(llama_server_binary)
    with serving(root, request, env=env, ready_timeout_s=READY_TIMEOUT_S) as (daemon, [info]):
        yield daemon, info


@dataclass(frozen=True)
class Kind:
    """One API surface's request, and how its streamed reply says it ended."""

    path: str
    body: Callable[[int], dict[str, object]]
    # Present in a streamed reply answered in full (the last event each API sends; one of
    # them where the API says a reply cut at its token limit apart).
    ends_with: tuple[str, ...]


KINDS = [
    Kind(
        "/v1/chat/completions",
        lambda n: {"messages": [{"role": "user", "content": f"Count to {n}"}], "max_tokens": 4},
        ("data: [DONE]",),
    ),
    Kind(
        "/v1/completions",
        lambda n: {"prompt": f"Once upon a time {n}", "max_tokens": 4},
        ("data: [DONE]",),
    ),
    Kind(
        "/v1/messages",
        lambda n: {"messages": [{"role": "user", "content": f"Count to {n}"}], "max_tokens": 4},
        ("event: message_stop",),
    ),
    Kind(
        "/v1/responses",
        lambda n: {"input": f"Count to {n}", "max_output_tokens": 4, "store": False},
        ("event: response.completed", "event: response.incomplete"),
    ),
    Kind(
        "/api/chat",
        lambda n: {
            "messages": [{"role": "user", "content": f"Count to {n}"}],
            "options": {"num_predict": 4},
        },
        ('"done":true',),
    ),
]


async def _one(client: httpx.AsyncClient, model: str, n: int) -> str | None:
    """Request number `n` (each API surface in turn, streamed or not): None when it was
    answered in full, else what went wrong."""
    kind = KINDS[n % len(KINDS)]
    stream = (n // len(KINDS)) % 2 == 0
    path = kind.path
    body = kind.body(n) | {"model": model, "stream": stream}
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
            if not any(end in text.replace('": ', '":') for end in kind.ends_with):
                return f"{path} (streamed) ended without {kind.ends_with}: {text[-300:]}"
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
