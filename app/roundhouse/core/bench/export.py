"""A benchmark result as JSON, CSV (one metric a row) or a Markdown table shaped like vLLM's."""

from __future__ import annotations

import csv
import io

from roundhouse.api.bench import BenchResult, ExportFormat, table_rows


def to_markdown(result: BenchResult) -> str:
    req = result.request
    lines = [
        f"## {req.label or req.model} ({result.id})",
        "",
        f"Model `{req.model}`, engine {result.engine or 'unknown'}, "
        f"{result.metrics.convention.value} conventions.",
        "",
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
    scalars = m.model_dump(exclude={"ttft", "tpot", "itl", "e2e", "dispatch_delay", "failures"})
    for key, value in scalars.items():
        if key != "notes":
            writer.writerow([key, value])
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
