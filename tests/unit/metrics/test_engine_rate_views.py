"""The engine's own tokens/s in the Monitor page's table and in `roundhouse monitor`."""

from __future__ import annotations

from rich.table import Table

from roundhouse.api.metrics import RATES_CAPTION, InstanceMetrics, MetricsSnapshot
from roundhouse.cli.monitor_view import engine_rates, monitor_view
from roundhouse.gui.widgets.monitor_flags import COLUMNS, Level, engine_rate_cell


def _point(output: float | None, prompt: float | None) -> InstanceMetrics:
    return InstanceMetrics(
        instance="a", engine="llama.cpp", t=1.0, engine_output_tps=output, engine_prompt_tps=prompt
    )


def test_the_page_shows_generation_with_the_prompt_rate_in_the_tooltip() -> None:
    assert "Engine tok/s" in COLUMNS
    cell = engine_rate_cell(_point(41.26, 812.0))
    assert cell.text == "41.3" and cell.level == Level.OK
    assert "812 tok/s" in cell.tooltip
    unknown = engine_rate_cell(_point(None, None))
    assert unknown.text == "—" and unknown.level == Level.UNKNOWN


def test_the_cli_shows_generation_then_prompt() -> None:
    assert engine_rates(_point(41.26, 812.4)) == "41.3/812"
    assert engine_rates(_point(20.0, None)) == "20.0/-"
    assert engine_rates(_point(None, None)) == "-"


def _headers(snapshot: MetricsSnapshot) -> list[str]:
    table = monitor_view(snapshot)
    assert isinstance(table, Table)
    return [str(column.header) for column in table.columns]


def test_the_cli_tells_the_rates_apart_and_shows_gpu_columns_only_with_gpu_figures() -> None:
    cpu_only = MetricsSnapshot(t=1.0, instances=[_point(41.0, 800.0)])
    headers = _headers(cpu_only)
    assert "gateway tok/s out" in headers and "engine tok/s out/in" in headers
    assert "VRAM" not in headers and "bandwidth" not in headers
    table = monitor_view(cpu_only)
    assert isinstance(table, Table) and table.caption == RATES_CAPTION
    on_gpu = _point(41.0, 800.0).model_copy(update={"vram_bytes": 1 << 30})
    assert {"VRAM", "bandwidth"} <= set(_headers(MetricsSnapshot(t=1.0, instances=[on_gpu])))
