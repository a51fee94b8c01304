"""CSV and Prometheus text of the metrics."""

from __future__ import annotations

import csv
import io

from roundhouse.api.metrics import (
    SERIES,
    InstanceMetrics,
    InstanceSeries,
    MetricsHistory,
    MetricsSnapshot,
)
from roundhouse.core.engines.metrics import parse_prometheus
from roundhouse.core.metrics.export import render_csv, render_prometheus


def test_prometheus_text_has_help_type_labels_and_leaves_out_unmeasured() -> None:
    point = InstanceMetrics(
        instance="llama-1",
        engine="llama.cpp",
        model='we"ird\nname',
        t=1.0,
        output_tps=12.5,
        requests=3,
        ttft_ms=250.0,
        cpu_fallback="only 1 of 2 layers",
    )
    text = render_prometheus(MetricsSnapshot(t=1.0, instances=[point]))
    assert "# TYPE roundhouse_instance_requests_total counter" in text
    assert 'model="we\\"ird\\nname"' in text
    assert "roundhouse_instance_gpu_memory_bytes" not in text  # never measured
    values = parse_prometheus(
        text,
        [
            "roundhouse_instance_output_tokens_per_second",
            "roundhouse_instance_time_to_first_token_seconds",
            "roundhouse_instance_cpu_fallback",
        ],
    )
    assert values == {
        "roundhouse_instance_output_tokens_per_second": 12.5,
        "roundhouse_instance_time_to_first_token_seconds": 0.25,
        "roundhouse_instance_cpu_fallback": 1.0,
    }
    assert render_prometheus(MetricsSnapshot(t=1.0, instances=[])) == ""


def test_csv_has_a_row_per_instance_and_time_and_blanks_for_none() -> None:
    values: dict[str, list[float | None]] = {name: [1.0, None] for name in SERIES}
    values["rss_bytes"] = [123456789.0, 5.0]
    history = MetricsHistory(
        resolution_s=1.0,
        window_s=60.0,
        series=[InstanceSeries(instance="a", t=[10.0, 11.0], values=values)],
    )
    rows = list(csv.reader(io.StringIO(render_csv(history))))
    assert rows[0] == ["t", "instance", *SERIES]
    # The engine's own rates are history too, so a CSV has them beside the gateway's.
    assert {"engine_output_tps", "engine_prompt_tps"} <= set(rows[0])
    assert rows[1][:3] == ["10.000", "a", "1"]
    assert rows[1][2 + SERIES.index("rss_bytes")] == "123456789"
    assert rows[2][2] == ""
