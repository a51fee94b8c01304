"""Rich renderings of benchmark results: vLLM's table, the list, a side-by-side comparison."""

from __future__ import annotations

import time

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roundhouse.api.bench import (
    BenchList,
    BenchResult,
    BenchStatus,
    counts_line,
    failure_lines,
    table_rows,
)


def _title(result: BenchResult) -> str:
    req = result.request
    engine = f" on {result.engine}" if result.engine else ""
    m = result.metrics
    marked = f" ⚠ {counts_line(m.completed, m.failed)}" if m.failed else ""
    return f"{req.label or req.model}{engine} ({result.id}){marked}"


def failures_view(result: BenchResult) -> RenderableType | None:
    """The failures above the table: the counts, each reason with its count and advice."""
    lines = failure_lines(result)
    if not lines:
        return None
    text = Text(lines[0] + "\n", style="bold red")
    for line in lines[1:]:
        text.append(line + "\n", style="yellow" if line.startswith(" ") else "red")
    return text


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
    failures = failures_view(result)
    parts: list[RenderableType] = [failures] if failures is not None else []
    parts.append(table)
    parts.extend(Text(note, style="yellow") for note in result.metrics.notes)
    return Group(*parts)


def compare_view(results: list[BenchResult]) -> RenderableType:
    """The runs side by side; runs with failures are marked and their reasons said below."""
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
    parts: list[RenderableType] = [table]
    for result in results:
        failures = failures_view(result)
        if failures is not None:
            parts.append(Text(_title(result), style="bold"))
            parts.append(failures)
    return Group(*parts)


def list_view(listing: BenchList) -> RenderableType:
    if not listing.results:
        return Text("No benchmark results yet. Run one with `roundhouse bench MODEL`.")
    table = Table(title="Benchmark results", title_justify="left")
    for name in ("id", "when", "model", "engine", "requests", "output tok/s", "TTFT p50 ms"):
        table.add_column(name, justify="right" if name[0].isupper() or " " in name else "left")
    table.add_column("failures")
    for s in listing.results:
        failed = s.status is BenchStatus.FAILED
        table.add_row(
            s.id,
            time.strftime("%Y-%m-%d %H:%M", time.localtime(s.created_at)),
            s.label or s.model,
            s.engine or "-",
            counts_line(s.completed, s.failed) if s.failed else str(s.num_prompts),
            "-" if failed else f"{s.output_throughput:.1f}" + ("*" if s.failed else ""),
            "-" if failed else f"{s.ttft_median_ms:.1f}",
            Text(("FAILED: " if failed else "") + "; ".join(s.reasons), style="red")
            if s.failed
            else "",
        )
    if any(s.status is BenchStatus.PARTIAL for s in listing.results):
        return Group(table, Text("* of the successful requests only", style="yellow"))
    return table
