"""Formula parity: on recorded request traces every metric equals an independent computation
written from vLLM's `calculate_metrics` and sglang's `calculate_metrics`, to 1e-9."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from roundhouse.api.bench import Convention, Slos, Stats
from roundhouse.core.bench.metrics import compute_metrics
from roundhouse.core.bench.records import RequestRecord

TOL = 1e-9


@dataclass
class Event:
    """One SSE data event as a client reads it: time, whether it has choices, its content."""

    t: float
    choices: bool
    content: str = ""
    usage: int | None = None


@dataclass
class Trace:
    start: float
    events: list[Event]
    end: float
    prompt_len: int
    requested: int
    error: str | None = None


def recorded_traces(seed: int, n: int = 60) -> list[Trace]:
    """Traces shaped like llama-server's streams: a role chunk with empty content, content
    chunks, a usage chunk; some requests fail, some have one token, some lack usage."""
    rng = np.random.default_rng(seed)
    traces = []
    for i in range(n):
        start = float(rng.uniform(0, 5))
        t = start + float(rng.uniform(0.02, 0.4))
        events = [Event(t, True, "")]
        tokens = 1 if i % 17 == 3 else int(rng.integers(2, 40))
        for _ in range(tokens):
            t += float(rng.exponential(0.03))
            events.append(Event(t, True, "tok"))
        t += 0.001
        usage = None if i % 11 == 5 else tokens
        if usage is not None:
            events.append(Event(t, False, usage=usage))
        end = t + 0.0005
        error = "HTTP 503: busy" if i % 13 == 7 else None
        traces.append(Trace(start, events, end, int(rng.integers(8, 64)), 32, error))
    return traces


def to_record(index: int, trace: Trace) -> RequestRecord:
    """What our runner records from the same stream."""
    record = RequestRecord(index, trace.prompt_len, trace.requested)
    record.sent_s = record.scheduled_s = trace.start
    record.prompt_tokens = trace.prompt_len
    for e in trace.events:
        record.last_chunk_s = e.t
        if e.choices:
            record.choice_s.append(e.t)
            if e.content:
                record.content_s.append(e.t)
        if e.usage is not None:
            record.output_tokens = e.usage
    record.end_s, record.error = trace.end, trace.error
    return record


@dataclass
class Output:
    """vLLM's and sglang's RequestFuncOutput."""

    success: bool
    start_time: float
    ttft: float = 0.0
    latency: float = 0.0
    itl: list[float] = field(default_factory=list)
    output_tokens: int = 0


def vllm_output(trace: Trace) -> Output:
    # vllm/benchmarks/lib/endpoint_request_func.py, async_request_openai_chat_completions.
    out = Output(success=trace.error is None, start_time=trace.start)
    st, ttft, recent = trace.start, 0.0, trace.start
    for e in trace.events:
        if e.choices:
            if ttft == 0.0:
                ttft = e.t - st
                out.ttft = ttft
            else:
                out.itl.append(e.t - recent)
        elif e.usage is not None:
            out.output_tokens = e.usage
        recent = e.t
    out.latency = recent - st
    if not out.output_tokens:
        # vLLM re-tokenizes the text: with one token per chunk, the count of content chunks.
        out.output_tokens = sum(1 for e in trace.events if e.choices)
    return out


def sglang_output(trace: Trace) -> Output:
    # sglang/bench_serving.py, async_request_openai_chat_completions.
    out = Output(success=trace.error is None, start_time=trace.start)
    st, ttft, recent = trace.start, 0.0, trace.start
    for e in trace.events:
        if e.content:
            if ttft == 0.0:
                ttft = e.t - st
                out.ttft = ttft
            else:
                out.itl.append(e.t - recent)
            recent = e.t
        if e.usage is not None:
            out.output_tokens = e.usage
    out.latency = trace.end - st
    if not out.output_tokens:
        out.output_tokens = trace.requested
    return out


def reference(traces: list[Trace], outputs: list[Output], dur_s: float, slo: dict[str, float]):
    actual, total_input, completed, good = [], 0, 0, 0
    itls, tpots, ttfts, e2els, all_tpots = [], [], [], [], []
    for trace, out in zip(traces, outputs, strict=True):
        if out.success:
            output_len = out.output_tokens
            actual.append(output_len)
            total_input += trace.prompt_len
            tpot = 0.0
            if output_len > 1:
                tpot = (out.latency - out.ttft) / (output_len - 1)
                tpots.append(tpot)
            all_tpots.append(tpot)
            itls += out.itl
            ttfts.append(out.ttft)
            e2els.append(out.latency)
            completed += 1
        else:
            actual.append(0)
    for ttft, tpot, e2el in zip(ttfts, all_tpots, e2els, strict=True):
        values = {"ttft": ttft, "tpot": tpot, "e2el": e2el}
        good += all(slo[k] / 1000 >= values[k] for k in slo)
    ok = [o for o in outputs if o.success]
    lo = min(o.start_time for o in ok)
    hi = max(o.start_time + o.latency for o in ok)
    seconds = int(np.ceil(hi - lo)) + 1
    per_s, conc = np.zeros(seconds), np.zeros(seconds)
    for o in ok:
        times = [o.start_time + o.ttft]
        now = times[0]
        for gap in o.itl:
            now += gap
            times.append(now)
        for t in times:
            b = int(t - lo)
            if 0 <= b < seconds:
                per_s[b] += 1
        for s in range(int(o.start_time - lo), int(o.start_time + o.latency - lo) + 1):
            conc[s] += 1

    def stats(xs: list[float]) -> dict[str, float]:
        xs = xs or [0]
        return {
            "mean": np.mean(xs) * 1000,
            "median": np.median(xs) * 1000,
            "std": np.std(xs) * 1000,
            "p90": np.percentile(xs, 90) * 1000,
            "p99": np.percentile(xs, 99) * 1000,
        }

    return {
        "completed": completed,
        "total_input": total_input,
        "total_output": sum(actual),
        "request_throughput": completed / dur_s,
        "output_throughput": sum(actual) / dur_s,
        "total_token_throughput": (total_input + sum(actual)) / dur_s,
        "goodput": good / dur_s,
        "peak": float(np.max(per_s)),
        "peak_concurrency": int(np.max(conc)),
        "ttft": stats(ttfts),
        "tpot": stats(tpots),
        "itl": stats(itls),
        "e2e": stats(e2els),
    }


def _same(ours: Stats, theirs: dict[str, Any]) -> None:
    for key, value in theirs.items():
        assert getattr(ours, key) == pytest.approx(value, abs=TOL, rel=0), key


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("convention", [Convention.VLLM, Convention.SGLANG])
def test_every_metric_matches_the_reference(seed: int, convention: Convention) -> None:
    traces = recorded_traces(seed)
    records = [to_record(i, t) for i, t in enumerate(traces)]
    make = vllm_output if convention is Convention.VLLM else sglang_output
    outputs = [make(t) for t in traces]
    duration = 9.5
    slos = Slos(ttft_ms=250, tpot_ms=40, e2e_ms=900)
    ref = reference(traces, outputs, duration, {"ttft": 250, "tpot": 40, "e2el": 900})
    m = compute_metrics(records, duration, convention, slos)

    assert m.completed == ref["completed"] and m.failed == len(traces) - ref["completed"]
    assert m.total_input_tokens == ref["total_input"]
    assert m.total_output_tokens == ref["total_output"]
    for name in ("request_throughput", "output_throughput", "total_token_throughput"):
        assert getattr(m, name) == pytest.approx(ref[name], abs=TOL, rel=0), name
    assert m.request_goodput == pytest.approx(ref["goodput"], abs=TOL, rel=0)
    assert m.peak_output_throughput == ref["peak"]
    assert m.peak_concurrency == ref["peak_concurrency"]
    for name in ("ttft", "tpot", "itl", "e2e"):
        _same(getattr(m, name), ref[name])
    assert m.failures and all("503" in f.error for f in m.failures)
    assert m.usage_missing > 0


def test_the_conventions_differ_where_documented() -> None:
    records = [to_record(i, t) for i, t in enumerate(recorded_traces(4))]
    vllm = compute_metrics(records, 9.0, Convention.VLLM)
    sglang = compute_metrics(records, 9.0, Convention.SGLANG)
    # sglang's TTFT waits for the first non-empty content, after vLLM's role chunk.
    assert sglang.ttft.mean > vllm.ttft.mean
    assert vllm.request_goodput is None


def test_few_samples_carry_a_tail_note_and_a_late_client_a_warning() -> None:
    records = [to_record(i, t) for i, t in enumerate(recorded_traces(5, n=20))]
    records[0].scheduled_s = records[0].sent_s - 0.5
    m = compute_metrics(records, 5.0)
    assert any("P99 rests on" in note for note in m.notes)
    assert m.client_behind and any("fell behind" in note for note in m.notes)
    on_time = [to_record(i, t) for i, t in enumerate(recorded_traces(5, n=20))]
    assert not compute_metrics(on_time, 5.0).client_behind


def test_no_successful_request_reports_zeros() -> None:
    record = RequestRecord(0, 10, 10, error="HTTP 404: no such model")
    m = compute_metrics([record], 1.0)
    assert m.completed == 0 and m.failed == 1
    assert m.ttft.mean == 0 and m.peak_output_throughput == 0
    assert m.failures[0].error == "HTTP 404: no such model"
