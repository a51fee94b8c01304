"""Schemas of the serving benchmark: what to run, its progress and its results."""

from __future__ import annotations

import time
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from roundhouse.api.engines import EngineId, EnginesOverview, ModelFormat


class Convention(StrEnum):
    """Whose definitions the metrics follow (see docs/bench.md)."""

    VLLM = "vllm"
    SGLANG = "sglang"


class Endpoint(StrEnum):
    CHAT = "chat"
    COMPLETIONS = "completions"


class BenchState(StrEnum):
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Slos(_Model):
    """Service-level objectives in milliseconds; a request counts for goodput when it meets
    every one given."""

    ttft_ms: float | None = Field(default=None, gt=0)
    tpot_ms: float | None = Field(default=None, gt=0)
    e2e_ms: float | None = Field(default=None, gt=0)

    def any(self) -> bool:
        return any(v is not None for v in (self.ttft_ms, self.tpot_ms, self.e2e_ms))


class BenchRequest(_Model):
    model: str = Field(min_length=1, description="any model name the gateway serves")
    num_prompts: int = Field(default=100, ge=1, le=100_000)
    request_rate: float | None = Field(
        default=None, gt=0, description="requests per second (Poisson); None: all at once"
    )
    max_concurrency: int | None = Field(default=None, ge=1, le=10_000)
    input_len: int = Field(default=256, ge=1, le=1_000_000)
    output_len: int = Field(default=128, ge=1, le=1_000_000)
    range_ratio: float = Field(default=0.0, ge=0.0, le=1.0)
    prompts_jsonl: str | None = Field(
        default=None, description="ShareGPT prompts (JSONL or JSON text) instead of random ones"
    )
    seed: int = 0
    warmups: int = Field(default=1, ge=0, le=100)
    convention: Convention = Convention.VLLM
    endpoint: Endpoint = Endpoint.CHAT
    ignore_eos: bool = Field(default=True, description="ask for exactly the output length")
    slos: Slos = Field(default_factory=Slos)
    label: str | None = Field(default=None, max_length=200)
    timeout_s: float = Field(default=600.0, gt=0, description="per request")


class Stats(_Model):
    """One latency metric in milliseconds (0 when there are no samples, as vLLM reports)."""

    count: int = 0
    mean: float = 0.0
    median: float = 0.0
    std: float = 0.0
    p90: float = 0.0
    p99: float = 0.0


class Failure(_Model):
    index: int
    error: str


class FailureGroup(_Model):
    """Failed requests that share one reason, with what to change (None when not known)."""

    reason: str = Field(description="the engine's or the client's words, as the first said it")
    count: int
    advice: str | None = None


class ServingContext(_Model):
    """The context of the instance that served the run, where known: what the advice on a
    context failure names."""

    slot_ctx: int | None = Field(default=None, description="tokens one request may use")
    slots: int | None = Field(default=None, description="requests the engine runs at once")
    ctx_size: int | None = Field(default=None, description="the ctx_size it was started with")
    parallel: int | None = Field(default=None, description="the parallel it was started with")


class BenchMetrics(_Model):
    convention: Convention
    completed: int
    failed: int
    duration_s: float
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    peak_output_throughput: float
    peak_concurrency: int
    request_goodput: float | None = None
    ttft: Stats
    tpot: Stats
    itl: Stats
    e2e: Stats
    dispatch_delay: Stats
    failures: list[Failure] = []
    notes: list[str] = Field(default=[], description="tail and client warnings, in words")
    client_behind: bool = False
    usage_missing: int = Field(default=0, description="requests counted without usage")
    failure_groups: list[FailureGroup] = Field(
        default=[], description="every failed request, grouped by reason, most first"
    )


class BenchProgress(_Model):
    id: str
    state: BenchState
    done: int = 0
    total: int = 0
    failed: int = Field(default=0, description="of the requests done, those that failed")
    kept: bool = Field(default=False, description="its result is kept under this id")
    error: str | None = None


class BenchStatus(StrEnum):
    """How a kept run went: every request answered, some failed, or all failed."""

    OK = "ok"
    PARTIAL = "partial"
    FAILED = "failed"


def status_of(completed: int, failed: int) -> BenchStatus:
    if not failed:
        return BenchStatus.OK
    return BenchStatus.PARTIAL if completed else BenchStatus.FAILED


def counts_line(completed: int, failed: int) -> str:
    """ "1 of 5 succeeded, 4 failed": successes first, failures named apart."""
    total = completed + failed
    if not failed:
        return f"{completed} of {total} succeeded"
    return f"{completed} of {total} succeeded, {failed} failed"


class BenchResult(_Model):
    id: str
    created_at: float = Field(description="seconds since the Unix epoch")
    request: BenchRequest
    engine: str | None = Field(default=None, description="the engine that served, when known")
    serving: ServingContext | None = Field(
        default=None, description="the serving instance's context, where known"
    )
    metrics: BenchMetrics
    status: BenchStatus = Field(
        default=BenchStatus.OK, description="always as the metrics' counts say (set on load)"
    )

    @model_validator(mode="after")
    def _status_from_counts(self) -> BenchResult:
        # Derived, but kept in the JSON so that exports carry it; a result kept before the
        # field existed gets it here.
        self.status = status_of(self.metrics.completed, self.metrics.failed)
        return self


def progress_words(done: int, total: int, failed: int) -> str:
    """ "3 of 5 done: 1 succeeded, 2 failed": failures are never folded into the count."""
    line = f"{done} of {total} done: {done - failed} succeeded"
    return line + (f", {failed} failed" if failed else "")


class BenchSummary(_Model):
    id: str
    created_at: float
    model: str
    label: str | None
    engine: str | None
    num_prompts: int
    convention: Convention
    output_throughput: float
    ttft_median_ms: float
    completed: int = 0
    failed: int = 0
    status: BenchStatus = BenchStatus.OK
    reasons: list[str] = Field(default=[], description="the failures' reasons, most first")


class BenchList(_Model):
    results: list[BenchSummary]


class ExportFormat(StrEnum):
    JSON = "json"
    CSV = "csv"
    MD = "md"


def _f(value: float) -> str:
    return f"{value:.2f}"


# Beside each throughput of a run with failures: the rate counts the successful requests only.
SUCCESSFUL_ONLY = " (successful only)"


def run_name(result: BenchResult) -> str:
    """A run in words for charts and lists: label or model, engine, workload and time."""
    req = result.request
    engine = f" on {result.engine}" if result.engine else ""
    pace = (
        f"c{req.max_concurrency}"
        if req.max_concurrency
        else ("all at once" if req.request_rate is None else f"{req.request_rate:g} req/s")
    )
    when = time.strftime("%m-%d %H:%M", time.localtime(result.created_at))
    workload = f"{req.num_prompts}×{req.input_len}/{req.output_len} {pace}"
    return f"{req.label or req.model}{engine}, {workload}, {when}"


def failure_lines(result: BenchResult) -> list[str]:
    """The failures in words, grouped by reason with what to change; empty when none."""
    m = result.metrics
    if not m.failed:
        return []
    if result.status is BenchStatus.FAILED:
        head = f"Every request failed ({m.failed} of {m.failed}): the run has no figures."
    else:
        requests = "request" if m.completed == 1 else "requests"
        head = (
            f"{counts_line(m.completed, m.failed)}: throughputs and latencies cover the "
            f"{m.completed} successful {requests} only."
        )
    lines = [head]
    for group in m.failure_groups:
        lines.append(f"{group.count} × {group.reason}")
        if group.advice:
            lines.append(f"    What to change: {group.advice}")
    told = sum(g.count for g in m.failure_groups)
    if told < m.failed:
        lines.append(f"{m.failed - told} × reason not kept")
    return lines


def table_rows(result: BenchResult) -> list[tuple[str, str]]:
    """vLLM's result table as (label, value) rows; section headings have an empty value.
    A run whose requests all failed has its counts only: none of its figures mean anything;
    a run with failures says that its throughputs count the successful requests only."""
    m, req = result.metrics, result.request
    rate = "inf" if req.request_rate is None else _f(req.request_rate)
    only = SUCCESSFUL_ONLY if m.failed else ""
    rows: list[tuple[str, str]] = [
        ("Serving Benchmark Result", ""),
        ("Convention", m.convention.value),
        ("Successful requests", str(m.completed)),
        ("Failed requests", str(m.failed)),
        ("Maximum request concurrency", str(req.max_concurrency or "None")),
        ("Request rate configured (RPS)", rate),
        ("Benchmark duration (s)", _f(m.duration_s)),
    ]
    if result.status is BenchStatus.FAILED:
        return rows
    rows += [
        ("Total input tokens", str(m.total_input_tokens)),
        ("Total generated tokens", str(m.total_output_tokens)),
        ("Request throughput (req/s)", _f(m.request_throughput) + only),
        ("Output token throughput (tok/s)", _f(m.output_throughput) + only),
        ("Peak output token throughput (tok/s)", _f(m.peak_output_throughput) + only),
        ("Peak concurrent requests", _f(m.peak_concurrency)),
        ("Total token throughput (tok/s)", _f(m.total_token_throughput) + only),
    ]
    if m.request_goodput is not None:
        rows.append(("Request goodput (req/s)", _f(m.request_goodput) + only))
    blocks = (
        ("Time to First Token", "TTFT", m.ttft),
        ("Time per Output Token (excl. 1st token)", "TPOT", m.tpot),
        ("Inter-token Latency", "ITL", m.itl),
        ("End-to-end Latency", "E2EL", m.e2e),
        ("Client dispatch delay", "dispatch delay", m.dispatch_delay),
    )
    for title, short, stats in blocks:
        rows.append((title, ""))
        rows.append((f"Mean {short} (ms)", _f(stats.mean)))
        rows.append((f"Median {short} (ms)", _f(stats.median)))
        rows.append((f"P90 {short} (ms)", _f(stats.p90)))
        rows.append((f"P99 {short} (ms)", _f(stats.p99)))
    return rows


class AbRequest(_Model):
    """A/B: the same workload against one model on each engine, one engine after the other."""

    model: str = Field(min_length=1, description="a local model file or folder (or repo id)")
    engines: list[str] = Field(min_length=2, max_length=4, description="engine ids, in order")
    models: dict[str, str] = Field(
        default={}, description="per engine, the model in its own format (e.g. MLX's folder)"
    )
    ctx_size: int = Field(default=4096, ge=64, le=1_000_000, description="where it is taken")
    workload: BenchRequest = Field(description="the benchmark; its model is set per engine")


class AbProgress(_Model):
    id: str
    state: BenchState
    stage: str = Field(default="", description="what happens now, in words")
    done: int = Field(default=0, description="requests done in the current arm")
    total: int = 0
    result_ids: list[str] = Field(default=[], description="one per finished arm, in order")
    failed: int = Field(default=0, description="requests failed in the current arm")
    warnings: list[str] = Field(
        default=[], description="per finished arm with failures: its counts and first reason"
    )
    error: str | None = None


# Engines an A/B can start on a model file or folder (Ollama pulls its own; endpoints are
# attached, not started).
AB_ENGINES = (EngineId.LLAMA_CPP, EngineId.MLX, EngineId.VLLM, EngineId.SGLANG)


def ab_engines(overview: EnginesOverview) -> list[EngineId]:
    """The engines found on this machine that an A/B can start, in the catalog's order."""
    found = {d.id for d in overview.detection.found}
    return [e for e in AB_ENGINES if e in found]


def loads(overview: EnginesOverview, engine: EngineId, fmt: ModelFormat) -> bool:
    return fmt in overview.catalog.spec(engine).formats
