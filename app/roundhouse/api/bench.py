"""Schemas of the serving benchmark: what to run, its progress and its results."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

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


class BenchProgress(_Model):
    id: str
    state: BenchState
    done: int = 0
    total: int = 0
    error: str | None = None


class BenchResult(_Model):
    id: str
    created_at: float = Field(description="seconds since the Unix epoch")
    request: BenchRequest
    engine: str | None = Field(default=None, description="the engine that served, when known")
    metrics: BenchMetrics


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


class BenchList(_Model):
    results: list[BenchSummary]


class ExportFormat(StrEnum):
    JSON = "json"
    CSV = "csv"
    MD = "md"


def _f(value: float) -> str:
    return f"{value:.2f}"


def table_rows(result: BenchResult) -> list[tuple[str, str]]:
    """vLLM's result table as (label, value) rows; section headings have an empty value."""
    m, req = result.metrics, result.request
    rate = "inf" if req.request_rate is None else _f(req.request_rate)
    rows: list[tuple[str, str]] = [
        ("Serving Benchmark Result", ""),
        ("Convention", m.convention.value),
        ("Successful requests", str(m.completed)),
        ("Failed requests", str(m.failed)),
        ("Maximum request concurrency", str(req.max_concurrency or "None")),
        ("Request rate configured (RPS)", rate),
        ("Benchmark duration (s)", _f(m.duration_s)),
        ("Total input tokens", str(m.total_input_tokens)),
        ("Total generated tokens", str(m.total_output_tokens)),
        ("Request throughput (req/s)", _f(m.request_throughput)),
        ("Output token throughput (tok/s)", _f(m.output_throughput)),
        ("Peak output token throughput (tok/s)", _f(m.peak_output_throughput)),
        ("Peak concurrent requests", _f(m.peak_concurrency)),
        ("Total token throughput (tok/s)", _f(m.total_token_throughput)),
    ]
    if m.request_goodput is not None:
        rows.append(("Request goodput (req/s)", _f(m.request_goodput)))
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
