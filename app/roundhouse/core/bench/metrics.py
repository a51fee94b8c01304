"""The benchmark's metrics from request records, as vLLM (default) or sglang define them."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from roundhouse.api.bench import BenchMetrics, Convention, Failure, Slos, Stats
from roundhouse.core.bench.records import RequestRecord

# Below this many samples p99 is close to the maximum: say so.
TAIL_SAMPLES = 1000
# The client is behind when it sends this much later than planned (p99, seconds).
BEHIND_S = 0.010
MAX_FAILURES_KEPT = 50


def stats_ms(values: Sequence[float]) -> Stats:
    """mean, median, std, p90, p99 in ms; numpy's linear percentiles; zeros when empty."""
    data = np.asarray(values if values else [0.0], dtype=float) * 1000.0
    p90, p99 = np.percentile(data, [90, 99])
    return Stats(
        count=len(values),
        mean=float(np.mean(data)),
        median=float(np.median(data)),
        std=float(np.std(data)),
        p90=float(p90),
        p99=float(p99),
    )


def token_times(record: RequestRecord, convention: Convention) -> list[float]:
    return record.choice_s if convention is Convention.VLLM else record.content_s


def output_tokens(record: RequestRecord, convention: Convention) -> int:
    """Tokens from usage; without usage vLLM re-tokenizes (we count token events, one per
    chunk as engines stream) and sglang takes the requested length."""
    if record.output_tokens is not None:
        return record.output_tokens
    if convention is Convention.VLLM:
        return len(record.choice_s)
    return record.requested_output


def latency(record: RequestRecord, convention: Convention) -> float:
    end = record.last_chunk_s if convention is Convention.VLLM else record.end_s
    return end - record.sent_s


def _peaks(records: list[RequestRecord], convention: Convention) -> tuple[float, int]:
    """vLLM's peak output tok/s and peak concurrency over 1 s buckets from the first send."""
    if not records:
        return 0.0, 0
    start = min(r.sent_s for r in records)
    end = max(r.sent_s + latency(r, convention) for r in records)
    buckets = int(np.ceil(end - start)) + 1
    tokens, concurrent = np.zeros(buckets), np.zeros(buckets)
    for r in records:
        for t in token_times(r, convention):
            bucket = int(t - start)
            if 0 <= bucket < buckets:
                tokens[bucket] += 1
        first, last = int(r.sent_s - start), int(r.sent_s + latency(r, convention) - start)
        concurrent[first : last + 1] += 1
    return float(np.max(tokens)), int(np.max(concurrent))


def _meets(ttft: float, tpot: float, e2e: float, slos: Slos) -> bool:
    limits = ((ttft, slos.ttft_ms), (tpot, slos.tpot_ms), (e2e, slos.e2e_ms))
    return all(limit is None or value * 1000.0 <= limit for value, limit in limits)


def compute_metrics(
    records: Sequence[RequestRecord],
    duration_s: float,
    convention: Convention = Convention.VLLM,
    slos: Slos | None = None,
) -> BenchMetrics:
    slos = slos or Slos()
    ok = [r for r in records if r.success]
    failed = [r for r in records if not r.success]
    ttfts: list[float] = []
    tpots: list[float] = []
    itls: list[float] = []
    e2es: list[float] = []
    good = 0
    total_in = total_out = missing = 0
    for r in ok:
        times = token_times(r, convention)
        out = output_tokens(r, convention)
        missing += r.output_tokens is None
        total_in += r.prompt_tokens if r.prompt_tokens is not None else r.requested_input
        total_out += out
        ttft = times[0] - r.sent_s if times else 0.0
        e2e = latency(r, convention)
        tpot = (e2e - ttft) / (out - 1) if out > 1 else 0.0
        if out > 1:
            tpots.append(tpot)
        itls.extend(b - a for a, b in itertools.pairwise(times))
        ttfts.append(ttft)
        e2es.append(e2e)
        good += _meets(ttft, tpot, e2e, slos)
    delays = [r.sent_s - r.scheduled_s for r in records if r.scheduled_s is not None]
    peak_tokens, peak_concurrency = _peaks(ok, convention)
    dispatch = stats_ms(delays)
    behind = dispatch.p99 > BEHIND_S * 1000.0
    return BenchMetrics(
        convention=convention,
        completed=len(ok),
        failed=len(failed),
        duration_s=duration_s,
        total_input_tokens=total_in,
        total_output_tokens=total_out,
        request_throughput=len(ok) / duration_s,
        output_throughput=total_out / duration_s,
        total_token_throughput=(total_in + total_out) / duration_s,
        peak_output_throughput=peak_tokens,
        peak_concurrency=peak_concurrency,
        request_goodput=good / duration_s if slos.any() else None,
        ttft=stats_ms(ttfts),
        tpot=stats_ms(tpots),
        itl=stats_ms(itls),
        e2e=stats_ms(e2es),
        dispatch_delay=dispatch,
        failures=[Failure(index=r.index, error=r.error or "") for r in failed][:MAX_FAILURES_KEPT],
        notes=_notes(len(ok), dispatch, behind, missing),
        client_behind=behind,
        usage_missing=missing,
    )


def _notes(completed: int, dispatch: Stats, behind: bool, missing: int) -> list[str]:
    notes = []
    if 0 < completed < TAIL_SAMPLES:
        top = max(1, int(np.ceil(completed * 0.01)))
        notes.append(
            f"P99 rests on the slowest {top} of {completed} requests, so it is close to the "
            f"maximum; run {TAIL_SAMPLES} or more requests to trust the tails."
        )
    if behind:
        notes.append(
            f"The client fell behind: it sent requests {dispatch.p99:.1f} ms late (p99), so "
            "latencies include its own delay. Lower the rate or the concurrency."
        )
    if missing:
        notes.append(f"{missing} replies carried no usage; their output tokens were estimated.")
    return notes
