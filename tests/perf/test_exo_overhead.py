"""exo attached through the gateway against exo directly (its stand-in, on loopback), in one
run: the time to first token the gateway adds, for OpenAI chat (passed through) and for
Anthropic Messages (translated to exo's chat completions), and the whole stream's time."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from roundhouse.api.instances import AddEndpointRequest
from roundhouse.client import DaemonClient
from tests.daemon_process import DaemonProcess, start_daemon
from tests.fakes.exo import ExoStandin, start_exo
from tests.processes import free_port

pytestmark = pytest.mark.perf

MODEL = "mlx-community/Llama-3.2-1B-Instruct-4bit"
ROUNDS = 40
HELLO = [{"role": "user", "content": "Tell a story."}]
# exo's tokens come at about 50 ms apart on a small model; the stand-in is quicker, so that
# the gateway's own share stands out.
TOKEN_DELAY_S = 0.005


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonProcess, ExoStandin]]:
    root = tmp_path_factory.mktemp("exo-perf")
    exo = start_exo(
        root / "exo", free_port(), "--standin-place", MODEL, "--token-delay", str(TOKEN_DELAY_S)
    )
    daemon = start_daemon(
        root / "home",
        env={
            "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        },
    )

    async def attach() -> None:
        async with DaemonClient(daemon.url, daemon.token) as client:
            await client.add_endpoint(AddEndpointRequest(url=exo.base_url))

    try:
        asyncio.run(attach())
        yield daemon, exo
    finally:
        daemon.stop(timeout=60)
        exo.stop()


def _timed(http: httpx.Client, url: str, body: dict[str, Any]) -> tuple[float, float]:
    """Seconds to the first generated text, and to the end of the stream."""
    began = time.perf_counter()
    first = 0.0
    with http.stream("POST", url, json=body) as reply:
        assert reply.status_code == 200, reply.read()
        for line in reply.iter_lines():
            if not first and ('"content"' in line or '"text_delta"' in line):
                first = time.perf_counter() - began
    assert first, "no text came"
    return first, time.perf_counter() - began


def test_exo_through_the_gateway_against_exo_directly(
    served: tuple[DaemonProcess, ExoStandin], report: Any
) -> None:
    daemon, exo = served
    chat = {"model": MODEL, "messages": HELLO, "stream": True}
    anthropic = {"model": MODEL, "messages": HELLO, "max_tokens": 64, "stream": True}
    runs = {
        "direct": (exo.base_url + "/v1/chat/completions", chat),
        "gateway_openai": (daemon.url + "/v1/chat/completions", chat),
        "gateway_anthropic": (daemon.url + "/v1/messages", anthropic),
    }
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    with httpx.Client(trust_env=False, timeout=60) as http:
        for url, body in runs.values():
            _timed(http, url, body)  # warm: connections, the gateway's first look
        for _ in range(ROUNDS):
            # Interleaved, so that the machine's load falls on each alike.
            for name, (url, body) in runs.items():
                figures[name].append(_timed(http, url, body))
    direct_ttft = statistics.median(t for t, _ in figures["direct"])
    direct_total = statistics.median(d for _, d in figures["direct"])
    report.add("direct_ttft_p50_ms", round(direct_ttft * 1000, 2))
    for name in ("gateway_openai", "gateway_anthropic"):
        ttft = statistics.median(t for t, _ in figures[name])
        total = statistics.median(d for _, d in figures[name])
        report.add(f"{name}_added_ttft_p50_ms", round((ttft - direct_ttft) * 1000, 2))
        report.add(f"{name}_stream_time_ratio", round(total / direct_total, 3))
    # Generous bounds for a shared machine: the point is the figures, reported above.
    added = statistics.median(t for t, _ in figures["gateway_openai"]) - direct_ttft
    assert added < 0.05
