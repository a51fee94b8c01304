"""A benchmark result as JSON, CSV (one metric a row) or a Markdown table shaped like vLLM's;
each carries the run's status and, when requests failed, their reasons and the advice."""

from __future__ import annotations

import csv
import io

from roundhouse.api.bench import BenchResult, ExportFormat, failure_lines, table_rows


def to_markdown(result: BenchResult) -> str:
    req = result.request
    lines = [
        f"## {req.label or req.model} ({result.id})",
        "",
        f"Model `{req.model}`, engine {result.engine or 'unknown'}, "
        f"{result.metrics.convention.value} conventions.",
        "",
    ]
    failures = failure_lines(result)
    if failures:
        lines.append(f"> **{result.status.value.upper()}: {failures[0]}**")
        lines.extend(f">\n> - {line.strip()}" for line in failures[1:])
        lines.append("")
    lines += [
        "| Metric | Value |",
        "|:--|--:|",
    ]
    for label, value in table_rows(result):
        lines.append(f"| **{label}** | |" if not value else f"| {label} | {value} |")
    lines.extend(f"\n> {note}" for note in result.metrics.notes)
    return "\n".join(lines) + "\n"


def to_csv(result: BenchResult) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["metric", "value"])
    m = result.metrics
    writer.writerow(["id", result.id])
    writer.writerow(["model", result.request.model])
    writer.writerow(["engine", result.engine or ""])
    writer.writerow(["status", result.status.value])
    # The figures stay numbers; this row says what the throughputs count.
    covers = "successful requests only" if m.failed else "all requests"
    writer.writerow(["throughput_covers", covers])
    lists = {"ttft", "tpot", "itl", "e2e", "dispatch_delay", "failures", "failure_groups", "notes"}
    for key, value in m.model_dump(exclude=lists).items():
        writer.writerow([key, value])
    for n, group in enumerate(m.failure_groups, start=1):
        writer.writerow([f"failure_{n}_count", group.count])
        writer.writerow([f"failure_{n}_reason", group.reason])
        writer.writerow([f"failure_{n}_advice", group.advice or ""])
    for name in ("ttft", "tpot", "itl", "e2e", "dispatch_delay"):
        for stat, value in getattr(m, name).model_dump().items():
            unit = "" if stat == "count" else "_ms"
            writer.writerow([f"{name}_{stat}{unit}", value])
    return out.getvalue()


def export(result: BenchResult, fmt: ExportFormat) -> str:
    if fmt is ExportFormat.MD:
        return to_markdown(result)
    if fmt is ExportFormat.CSV:
        return to_csv(result)
    return result.model_dump_json(indent=2) + "\n"
