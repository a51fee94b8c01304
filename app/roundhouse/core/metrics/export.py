"""Metrics as files: CSV of the history, and Prometheus' text format for scrapers."""

from __future__ import annotations

import csv
import io
import math

from roundhouse.api.metrics import SERIES, MetricsHistory, MetricsSnapshot

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# (name, type, help, attribute of InstanceMetrics)
_FAMILIES: tuple[tuple[str, str, str, str], ...] = (
    (
        "output_tokens_per_second",
        "gauge",
        "Output tokens per second via the gateway.",
        "output_tps",
    ),
    (
        "prompt_tokens_per_second",
        "gauge",
        "Prompt tokens per second via the gateway.",
        "prompt_tps",
    ),
    ("output_tokens_total", "counter", "Output tokens via the gateway.", "output_tokens"),
    ("prompt_tokens_total", "counter", "Prompt tokens via the gateway.", "prompt_tokens"),
    ("requests_total", "counter", "Requests answered via the gateway.", "requests"),
    ("requests_running", "gauge", "Requests the engine is answering.", "running"),
    ("requests_queued", "gauge", "Requests waiting in the gateway's queue.", "queued"),
    ("time_to_first_token_seconds", "gauge", "Median over recent requests.", "ttft_ms"),
    ("inter_token_latency_seconds", "gauge", "Median over recent requests.", "itl_ms"),
    (
        "engine_prompt_tokens_per_second",
        "gauge",
        "Prompt tokens per second the engine measured: median of recent requests, or for "
        "vLLM over the last interval between scrapes of its /metrics.",
        "engine_prompt_tps",
    ),
    (
        "engine_output_tokens_per_second",
        "gauge",
        "Generation tokens per second per request on the engine's side: median of recent "
        "requests, or for vLLM and SGLang over the last interval between scrapes.",
        "engine_output_tps",
    ),
    ("cpu_percent", "gauge", "CPU of the process tree, percent of one core.", "cpu_percent"),
    ("resident_bytes", "gauge", "Resident memory of the process tree.", "rss_bytes"),
    ("mapped_model_bytes", "gauge", "Model files mapped into the process.", "mapped_bytes"),
    ("gpu_memory_bytes", "gauge", "GPU memory the process holds.", "vram_bytes"),
    ("kv_cache_usage_ratio", "gauge", "KV cache in use, from the engine.", "kv_usage"),
    ("bandwidth_use_ratio", "gauge", "Share of the GPU's peak memory bandwidth.", "bandwidth_use"),
    ("cpu_fallback", "gauge", "1 when the instance runs on the CPU unasked.", "cpu_fallback"),
)
_PREFIX = "roundhouse_instance_"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


def render_prometheus(snapshot: MetricsSnapshot) -> str:
    """The snapshot in Prometheus' text exposition format 0.0.4; a figure nobody measured
    is left out rather than written as 0."""
    lines: list[str] = []
    for name, kind, help_text, attr in _FAMILIES:
        samples = []
        for point in snapshot.instances:
            value = getattr(point, attr)
            if attr == "cpu_fallback":
                value = 1 if value else 0
            elif attr in ("ttft_ms", "itl_ms") and value is not None:
                value = value / 1000
            if value is None:
                continue
            labels = (
                f'instance="{_label(point.instance)}",engine="{_label(point.engine)}",'
                f'model="{_label(point.model or "")}"'
            )
            samples.append(f"{_PREFIX}{name}{{{labels}}} {_number(value)}")
        if samples:
            lines.append(f"# HELP {_PREFIX}{name} {help_text}")
            lines.append(f"# TYPE {_PREFIX}{name} {kind}")
            lines.extend(samples)
    return "\n".join(lines) + "\n" if lines else ""


def render_csv(history: MetricsHistory) -> str:
    """One row per instance and time: t, instance, then each figure (empty: not measured)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["t", "instance", *SERIES])
    for series in history.series:
        for k, t in enumerate(series.t):
            row: list[str] = [f"{t:.3f}", series.instance]
            for name in SERIES:
                value = series.values[name][k]
                row.append("" if value is None else _number(value))
            writer.writerow(row)
    return out.getvalue()
