"""Schemas of live metrics per instance: the current figures, their history, the stream."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# The figures of a point, in this order in history columns and CSV files.
SERIES: tuple[str, ...] = (
    "output_tps",
    "prompt_tps",
    "running",
    "queued",
    "ttft_ms",
    "itl_ms",
    "cpu_percent",
    "rss_bytes",
    "mapped_bytes",
    "vram_bytes",
    "kv_usage",
    "bandwidth_use",
    "engine_output_tps",
    "engine_prompt_tps",
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class InstanceMetrics(_Frozen):
    """One instance at one second; None where nothing measures the figure."""

    instance: str
    engine: str
    model: str | None = None
    t: float = Field(description="seconds since the Unix epoch")
    output_tps: float = Field(0.0, description="output tokens per second through the gateway")
    prompt_tps: float = Field(0.0, description="prompt tokens per second through the gateway")
    running: int = 0
    queued: int = 0
    ttft_ms: float | None = Field(None, description="median time to first token, recent requests")
    itl_ms: float | None = Field(None, description="median inter-token latency, recent requests")
    requests: int = Field(0, description="requests answered since the daemon started")
    output_tokens: int = Field(0, description="output tokens since the daemon started")
    prompt_tokens: int = Field(0, description="prompt tokens since the daemon started")
    engine_prompt_tps: float | None = Field(
        None,
        description="prompt tokens/s the engine measured: llama.cpp timings (recent median), "
        "vLLM's prefill histogram (last scrape interval)",
    )
    engine_output_tps: float | None = Field(
        None,
        description="generation tokens/s per request on the engine's side: llama.cpp timings "
        "(recent median), Ollama's usage over the stream's duration, vLLM's and SGLang's "
        "time-per-output-token histograms (last scrape interval)",
    )
    cpu_percent: float | None = Field(None, description="of one core, the process tree")
    rss_bytes: int | None = Field(
        None, description="resident memory of the tree; on macOS its physical footprint"
    )
    mapped_bytes: int | None = Field(None, description="model files mapped into the process")
    vram_bytes: int | None = Field(
        None, description="GPU memory of the process (NVML), else Ollama's size_vram"
    )
    kv_usage: float | None = Field(None, description="KV cache in use, 0..1, from the engine")
    engine_figures: dict[str, float] = Field(
        default={}, description="the engine's own /metrics, as last scraped"
    )
    bandwidth_use: float | None = Field(
        None, description="tokens/s x weight bytes per token / the GPU's peak bandwidth"
    )
    bandwidth_note: str | None = None
    bandwidth_low: bool = False
    cpu_fallback: str | None = Field(None, description="why it runs on the CPU when it should not")


class MetricsSnapshot(_Frozen):
    t: float
    instances: list[InstanceMetrics]


class InstanceSeries(_Frozen):
    """One instance's history: times and one column per name in SERIES (None: not measured)."""

    instance: str
    t: list[float]
    values: dict[str, list[float | None]]


class MetricsHistory(_Frozen):
    resolution_s: float = Field(description="1 for windows within the hour, else 60")
    window_s: float
    series: list[InstanceSeries]


# The two rates the Monitor and `roundhouse monitor` show, told apart in one sentence.
RATES_CAPTION = (
    "Gateway tok/s is what clients received in the last second, all requests together, "
    "pauses included; Engine tok/s is one reply's speed while the engine generates it. "
    "Short replies and idle time make the first lower."
)
