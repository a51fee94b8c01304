"""The STAND-INs' /metrics: the pretend engine's counters and histograms in Prometheus' text
format, under the names, types and labels the real vLLM and SGLang use."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.fakes.openai_engines.server import Engine

# Seconds (latencies) and tokens (request sizes, as vLLM's 1-2-5 buckets).
BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0)
TOKEN_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)


class Histogram:
    """A Prometheus histogram with cumulative buckets."""

    def __init__(self, bounds: tuple[float, ...] = BUCKETS) -> None:
        self.bounds = bounds
        self.buckets = [0] * len(bounds)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.count += 1
        self.sum += value
        for i, bound in enumerate(self.bounds):
            if value <= bound:
                self.buckets[i] += 1


class Exposition:
    """Lines of one scrape; every sample carries the engine's labels (vLLM: `engine` and
    `model_name`, SGLang: `model_name`)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.out: list[str] = []

    def labels(self, extra: str = "") -> str:
        settings = self.engine.settings
        name = settings.served_names[0].replace("\\", "\\\\").replace('"', '\\"')
        engine = 'engine="0",' if settings.personality == "vllm" else ""
        return "{" + engine + f'model_name="{name}"' + extra + "}"

    def metric(self, name: str, kind: str, help_: str, value: float) -> None:
        self.out += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
        if kind == "counter":
            self.out.append(f"{name}_total{self.labels()} {float(value)}")
            self.out.append(f"{name}_created{self.labels()} {time.time()}")
        else:
            self.out.append(f"{name}{self.labels()} {float(value)}")

    def histogram(self, name: str, help_: str, hist: Histogram) -> None:
        self.out += [f"# HELP {name} {help_}", f"# TYPE {name} histogram"]
        bounds = [*(str(b) for b in hist.bounds), "+Inf"]
        for bound, count in zip(bounds, [*hist.buckets, hist.count], strict=True):
            labels = self.labels(',le="' + bound + '"')
            self.out.append(f"{name}_bucket{labels} {float(count)}")
        self.out.append(f"{name}_count{self.labels()} {float(hist.count)}")
        self.out.append(f"{name}_sum{self.labels()} {hist.sum}")

    def text(self) -> str:
        return "\n".join(self.out) + "\n"


def vllm_metrics(engine: Engine) -> str:
    """vLLM's /metrics. `--metric-names old` is an older vLLM: `gpu_cache_usage_perc` and the
    per-token `time_per_output_token_seconds`, without the inter-token and per-request
    time-per-output-token histograms that replaced it; `new` the reverse; `both` all."""
    x = Exposition(engine)
    new = engine.settings.metric_names in ("new", "both")
    old = engine.settings.metric_names in ("old", "both")
    x.metric("vllm:num_requests_running", "gauge", "Requests in batches.", engine.running)
    x.metric("vllm:num_requests_waiting", "gauge", "Requests waiting.", engine.waiting)
    usage = engine.kv_usage()
    if new:
        x.metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage (1 = 100%).", usage)
    if old:
        x.metric("vllm:gpu_cache_usage_perc", "gauge", "GPU KV-cache usage.", usage)
    x.metric("vllm:num_preemptions", "counter", "Preemptions.", 0)
    x.metric("vllm:prompt_tokens", "counter", "Prefill tokens processed.", engine.prompt_tokens)
    generated = engine.generation_tokens
    x.metric("vllm:generation_tokens", "counter", "Generation tokens processed.", generated)
    x.out += [
        "# HELP vllm:request_success_total Successfully processed requests.",
        "# TYPE vllm:request_success_total counter",
    ]
    for reason in ("stop", "length", "abort"):
        labels = x.labels(f',finished_reason="{reason}"')
        x.out.append(f"vllm:request_success_total{labels} {float(engine.success.get(reason, 0))}")
    x.histogram("vllm:time_to_first_token_seconds", "Time to first token.", engine.ttft)
    if new:
        x.histogram("vllm:inter_token_latency_seconds", "Inter-token latency.", engine.itl)
        x.histogram(
            "vllm:request_time_per_output_token_seconds",
            "Histogram of time_per_output_token_seconds per request.",
            engine.request_tpot,
        )
    if old:
        x.histogram("vllm:time_per_output_token_seconds", "Time per output token.", engine.itl)
    x.histogram("vllm:e2e_request_latency_seconds", "End-to-end request latency.", engine.e2e)
    x.histogram(
        "vllm:request_prefill_time_seconds",
        "Histogram of time spent in PREFILL phase for request.",
        engine.prefill,
    )
    x.histogram(
        "vllm:request_prompt_tokens", "Number of prefill tokens processed.", engine.request_prompt
    )
    return x.text()


def sglang_metrics(engine: Engine) -> str:
    """SGLang's /metrics (with --enable-metrics). Its inter-token histogram counts every token
    after the first, and it has no prefill-time histogram."""
    x = Exposition(engine)
    prompt, cached = engine.prompt_tokens, engine.cached_prompt_tokens
    x.metric("sglang:prompt_tokens", "counter", "Prefill tokens.", prompt)
    x.metric("sglang:generation_tokens", "counter", "Generation tokens.", engine.generation_tokens)
    x.metric("sglang:num_running_reqs", "gauge", "Running requests.", engine.running)
    x.metric("sglang:num_queue_reqs", "gauge", "Queued requests.", engine.waiting)
    x.metric("sglang:token_usage", "gauge", "KV token usage.", engine.kv_usage())
    hit = cached / prompt if prompt else 0.0
    x.metric("sglang:cache_hit_rate", "gauge", "Prefix cache hit rate.", hit)
    x.metric("sglang:gen_throughput", "gauge", "Generation tok/s.", engine.last_throughput)
    x.histogram("sglang:time_to_first_token_seconds", "Time to first token.", engine.ttft)
    x.histogram(
        "sglang:inter_token_latency_seconds", "Histogram of inter-token latency.", engine.itl
    )
    x.histogram("sglang:e2e_request_latency_seconds", "E2E latency.", engine.e2e)
    return x.text()
