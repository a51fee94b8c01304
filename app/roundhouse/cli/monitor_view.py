"""Rich rendering of the live metrics: one row per instance."""

from __future__ import annotations

import re

from rich.table import Table

from roundhouse.api.metrics import RATES_CAPTION, InstanceMetrics, MetricsSnapshot
from roundhouse.base.units import format_bytes

_WINDOW = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_S = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_window(text: str) -> float:
    """'90', '90s', '5m', '1h', '1d' in seconds; ValueError in words otherwise."""
    match = _WINDOW.match(text.lower())
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(f"'{text}' is not a time window: write e.g. 90s, 5m, 1h or 1d.")
    seconds = float(match.group(1)) * _UNIT_S[match.group(2)]
    if seconds > 86400:
        raise ValueError(f"'{text}' is longer than the day the daemon keeps: 1d at most.")
    return seconds


def _num(value: float | None, unit: str = "", digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}{unit}"


def engine_rates(point: InstanceMetrics) -> str:
    """The engine's own tokens/s, generation then prompt ('-' for what it did not say)."""
    if point.engine_output_tps is None and point.engine_prompt_tps is None:
        return "-"
    return f"{_num(point.engine_output_tps)}/{_num(point.engine_prompt_tps, digits=0)}"


def monitor_view(snapshot: MetricsSnapshot) -> Table | str:
    if not snapshot.instances:
        return "No instances are running. Start one with `roundhouse engines start`."
    table = Table(
        title="Instances, live",
        title_justify="left",
        caption=RATES_CAPTION,
        caption_justify="left",
    )
    columns = ("instance", "engine", "gateway tok/s out", "in", "engine tok/s out/in")
    for column in (*columns, "run/queue", "TTFT", "ITL"):
        table.add_column(column, justify="right" if column != "instance" else "left")
    # The GPU's columns only where some instance has a GPU figure (none without a GPU).
    points = snapshot.instances
    gpu = any(p.vram_bytes is not None or p.bandwidth_use is not None for p in points)
    for column in ("CPU", "RSS", *(("VRAM",) if gpu else ()), "KV"):
        table.add_column(column, justify="right")
    if gpu:
        table.add_column("bandwidth", justify="right")
    table.add_column("flags", justify="left")
    for p in points:
        flags = []
        if p.cpu_fallback:
            flags.append(f"[red]CPU fallback: {p.cpu_fallback}[/]")
        if p.bandwidth_low:
            flags.append("[yellow]low bandwidth use[/]")
        vram = format_bytes(p.vram_bytes) if p.vram_bytes is not None else "-"
        kv = _num(p.kv_usage * 100 if p.kv_usage is not None else None, "%", 0)
        bandwidth = _num(p.bandwidth_use * 100 if p.bandwidth_use is not None else None, "%", 0)
        table.add_row(
            p.instance,
            p.engine,
            _num(p.output_tps),
            _num(p.prompt_tps),
            engine_rates(p),
            f"{p.running}/{p.queued}",
            _num(p.ttft_ms, " ms", 0),
            _num(p.itl_ms, " ms", 1),
            _num(p.cpu_percent, "%", 0),
            format_bytes(p.rss_bytes),
            *((vram,) if gpu else ()),
            kv,
            *((bandwidth,) if gpu else ()),
            " ".join(flags),
        )
    return table
