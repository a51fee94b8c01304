"""Through a paired machine against that machine directly, side by side in one run: the time to
first token and the output tokens/s a request gains or loses when beta's gateway relays it over
TLS to alpha's (two real daemons on loopback, a real llama-server on alpha). Goals: at most
+3 ms TTFT p50, at least 0.95 of the throughput."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import StartRequest
from tests.daemon_process import DaemonProcess, path_with, start_ready
from tests.support.peers import pair, peer_daemon

pytestmark = pytest.mark.perf

MODEL = "tiny-bench"
# Long enough that the generation, not the first token's wait, makes the rate.
TOKENS = 1024
ROUNDS = 24


@pytest.fixture(scope="module")
def machines(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DaemonProcess, DaemonProcess]]:
    base = tmp_path_factory.mktemp("peer-perf")
    env = {**path_with(llama_server_binary), "HF_HUB_CACHE": str(base / "hf")}
    with (
        peer_daemon(base / "alpha", "alpha", env=env, models_dir=str(base / "hf")) as alpha,
        peer_daemon(base / "beta", "beta", models_dir=str(base / "hf-b")) as beta,
    ):
        # The engine on one thread, as in test_gateway_throughput: on two cores an engine on
        # every core leaves the relays none, and the figure would be the machine's.
        options = InstanceOptions(model=str(tiny_gguf), served_name=MODEL, threads=1)
        request = StartRequest(engine=EngineId.LLAMA_CPP, options=options)
        asyncio.run(start_ready(alpha, request))
        pair(beta, alpha)
        yield alpha, beta


def _body(seed: int) -> dict[str, Any]:
    return {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Tell a long story."}],
        "max_tokens": TOKENS,
        "ignore_eos": True,
        "temperature": 0,
        "seed": seed,
        "stream": True,
    }


def _stream(http: httpx.Client, seed: int) -> tuple[float, float]:
    """(ms to the first content, output tokens per second after it)."""
    began = time.perf_counter()
    first: float | None = None
    with http.stream("POST", "/v1/chat/completions", json=_body(seed)) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if first is None and '"content":"' in line:
                first = time.perf_counter()
    ended = time.perf_counter()
    assert first is not None
    return (first - began) * 1000, (TOKENS - 1) / (ended - first)


def _served_through(beta: DaemonProcess) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with beta.control() as client:
            models = client.get("/api/v1/gateway/models").json()["models"]
        if any(m["id"] == MODEL and m["state"] == "serving" for m in models):
            return
        time.sleep(0.2)
    raise AssertionError(f"{MODEL} never listed on beta")


def test_through_a_peer_against_the_peer_directly(
    machines: tuple[DaemonProcess, DaemonProcess], report: Any
) -> None:
    alpha, beta = machines
    with (
        httpx.Client(base_url=alpha.url, timeout=120) as direct,
        httpx.Client(base_url=beta.url, timeout=120) as relayed,
    ):
        _served_through(beta)
        for warm in range(3):
            _stream(direct, warm)
            _stream(relayed, warm)
        ttft: dict[str, list[float]] = {"direct": [], "peer": []}
        rate: dict[str, list[float]] = {"direct": [], "peer": []}
        for seed in range(ROUNDS):
            # Alternated, so that the machine's noise falls on both paths alike.
            order = [("direct", direct), ("peer", relayed)]
            for name, http in order if seed % 2 else reversed(order):
                first_ms, per_s = _stream(http, seed)
                ttft[name].append(first_ms)
                rate[name].append(per_s)
    p50 = {name: statistics.median(values) for name, values in ttft.items()}
    tps = {name: statistics.median(values) for name, values in rate.items()}
    report.add("ttft_p50_ms_direct", round(p50["direct"], 2))
    report.add("ttft_p50_ms_through_peer", round(p50["peer"], 2))
    report.add("ttft_p50_added_ms", round(p50["peer"] - p50["direct"], 2))
    report.add("tokens_per_s_direct", round(tps["direct"], 1))
    report.add("tokens_per_s_through_peer", round(tps["peer"], 1))
    report.add("throughput_ratio", round(tps["peer"] / tps["direct"], 3))
    report.add("rounds", ROUNDS)
    report.add("tokens_per_stream", TOKENS)
