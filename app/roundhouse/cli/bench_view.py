"""Rich renderings of benchmark results: vLLM's table, the list, a side-by-side comparison."""

from __future__ import annotations

import time

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roundhouse.api.bench import BenchList, BenchResult, table_rows


def _title(result: BenchResult) -> str:
    req = result.request
    engine = f" on {result.engine}" if result.engine else ""
    return f"{req.label or req.model}{engine} ({result.id})"


def result_view(result: BenchResult) -> RenderableType:
    table = Table(title=_title(result), show_header=False, title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for label, value in table_rows(result):
        if value:
            table.add_row(label, value)
        else:
            table.add_section()
            table.add_row(Text(label, style="bold"), "")
    parts: list[RenderableType] = [table]
    parts.extend(Text(note, style="yellow") for note in result.metrics.notes)
    for failure in result.metrics.failures[:5]:
        parts.append(Text(f"request {failure.index} failed: {failure.error}", style="red"))
    return Group(*parts)


def compare_view(results: list[BenchResult]) -> RenderableType:
    table = Table(title="Benchmark comparison", title_justify="left")
    table.add_column("metric")
    for result in results:
        table.add_column(_title(result), justify="right")
    columns = [table_rows(r) for r in results]
    # Rows differ only where goodput is present in some results: align by label.
    labels = list(dict.fromkeys(label for rows in columns for label, _ in rows))
    for label in labels:
        values = [dict(rows).get(label, "-") for rows in columns]
        if all(v == "" for v in values):
            table.add_section()
            table.add_row(Text(label, style="bold"), *["" for _ in values])
        else:
            table.add_row(label, *values)
    return table


def list_view(listing: BenchList) -> RenderableType:
    if not listing.results:
        return Text("No benchmark results yet. Run one with `roundhouse bench MODEL`.")
    table = Table(title="Benchmark results", title_justify="left")
    for name in ("id", "when", "model", "engine", "requests", "output tok/s", "TTFT p50 ms"):
        table.add_column(name, justify="right" if name[0].isupper() or " " in name else "left")
    for s in listing.results:
        table.add_row(
            s.id,
            time.strftime("%Y-%m-%d %H:%M", time.localtime(s.created_at)),
            s.label or s.model,
            s.engine or "-",
            str(s.num_prompts),
            f"{s.output_throughput:.1f}",
            f"{s.ttft_median_ms:.1f}",
        )
    return table
