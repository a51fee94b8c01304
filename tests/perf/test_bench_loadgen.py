"""The benchmark's load generator keeps 64 concurrent streams at 100 tokens/s each from a
stand-in server without falling behind: its dispatch delay p99 stays under 5 ms, both in a
closed loop of 64 and with Poisson arrivals at the rate that keeps about 64 in flight."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import uvloop

from roundhouse.api.bench import BenchRequest
from roundhouse.core.bench.service import run_benchmark

STREAMS = 64
TOKENS_PER_S = 100.0
OUTPUT = 200  # two seconds a stream


@pytest.fixture
def stand_in() -> Iterator[str]:
    argv = [sys.executable, "-m", "tests.fakes.bench_stream", "--tokens-per-s", str(TOKENS_PER_S)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=10)


# A stream lasts OUTPUT / TOKENS_PER_S seconds: this rate keeps STREAMS in flight on average.
POISSON_RATE = STREAMS / (OUTPUT / TOKENS_PER_S)


@pytest.mark.perf
@pytest.mark.parametrize("arrivals", ["closed-loop", "poisson"])
def test_64_streams_at_100_tokens_per_s(stand_in: str, report: Any, arrivals: str) -> None:
    closed = arrivals == "closed-loop"
    request = BenchRequest(
        model="stand-in",
        num_prompts=STREAMS * 3,
        max_concurrency=STREAMS if closed else None,
        request_rate=None if closed else POISSON_RATE,
        input_len=32,
        output_len=OUTPUT,
        warmups=1,
    )
    # The daemon runs benchmarks on uvloop (ADR 2); so does this one.
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        result = runner.run(run_benchmark(request, stand_in, "unused"))
    m = result.metrics
    report.add("arrivals", arrivals)
    report.add("streams", STREAMS)
    report.add("peak_concurrency", m.peak_concurrency)
    report.add("output_tok_per_s", round(m.output_throughput, 1))
    report.add("ideal_tok_per_s", STREAMS * TOKENS_PER_S)
    report.add("dispatch_delay_p50_ms", round(m.dispatch_delay.median, 3))
    report.add("dispatch_delay_p99_ms", round(m.dispatch_delay.p99, 3))
    report.add("itl_p50_ms", round(m.itl.median, 3))
    report.add("itl_p99_ms", round(m.itl.p99, 3))
    assert m.failed == 0, m.failures
    assert m.total_output_tokens == STREAMS * 3 * OUTPUT
    assert m.dispatch_delay.p99 < 5.0, m.dispatch_delay
