"""Render Hugging Face search results, model pages and the token state for `roundhouse models`."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roundhouse.api.downloads import AnyDownloadItem, DownloadQueueView, OllamaPullItem
from roundhouse.api.fit import FitVerdict, ModelFit
from roundhouse.api.hub import HubModelDetails, HubSearchResult, HubTokenStatus
from roundhouse.api.library import DeleteResult, LibraryList, LibraryModel
from roundhouse.base.units import format_bytes, format_duration
from roundhouse.cli.tables import Column, console_width, fitted


def _count(value: int | None) -> str:
    if value is None:
        return ""
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.1f}{unit}"
    return str(value)


def search_view(result: HubSearchResult) -> RenderableType:
    if not result.models:
        return "No models found: try other words, or fewer --kind filters."
    table = Table(title="Hugging Face models", title_justify="left")
    for column in ("Model", "Kinds", "Params", "Downloads", "Likes", "Updated"):
        table.add_column(column)
    for model in result.models:
        name = Text(model.id)
        if model.gated:
            name.append(" (gated)", style="yellow")
        table.add_row(
            name,
            ", ".join(k.value for k in model.kinds),
            _count(model.parameter_count),
            _count(model.downloads),
            _count(model.likes),
            model.updated.date().isoformat() if model.updated else "",
        )
    return table


def details_view(page: HubModelDetails) -> RenderableType:
    head = Text(page.id, style="bold")
    facts = [
        f"license {page.license or 'not stated'}",
        "gated: accept the license on huggingface.co and add a token" if page.gated else "",
        f"{_count(page.parameter_count)} parameters" if page.parameter_count else "",
        page.architecture or "",
        f"context {page.context_length}" if page.context_length else "",
    ]
    lines: list[RenderableType] = [head, Text(" · ".join(f for f in facts if f), style="dim")]
    if page.summary:
        lines.append(Text(page.summary))
    table = Table(title="Files", title_justify="left")
    for column in ("Choice", "Kind", "Size", "Files"):
        table.add_column(column)
    for group in [*page.groups, *page.projectors]:
        table.add_row(
            group.name,
            group.kind.value,
            format_bytes(group.size),
            str(len(group.files)) if group.shards == 1 else f"{group.shards} parts",
        )
    lines.append(table if page.groups or page.projectors else Text("No model files."))
    return Group(*lines)


def token_view(status: HubTokenStatus) -> RenderableType:
    return Text(status.message)


def _eta(seconds: float | None, stalled: bool) -> str:
    if stalled:
        return "stalled"
    return format_duration(seconds) if seconds is not None else ""


def queue_view(view: DownloadQueueView) -> RenderableType:
    if not view.items and not view.ollama:
        return "No downloads: `roundhouse models pull REPO QUANT` starts one."
    table = Table(title=f"Downloads (into {view.hub_cache})", title_justify="left")
    for column in ("ID", "File", "State", "Done", "Size", "Speed", "ETA", "Note"):
        table.add_column(column)
    for item in view.items:
        share = f"{100 * item.bytes_done / item.size:.0f}%" if item.size else ""
        table.add_row(
            item.id,
            f"{item.repo}/{item.path}",
            item.state.value,
            share,
            format_bytes(item.size),
            f"{format_bytes(item.speed_bps)}/s" if item.speed_bps else "",
            _eta(item.eta_s, item.stalled),
            item.error or item.quarantine_path or "",
        )
    for pull in view.ollama:
        _ollama_row(table, pull)
    return table


def _ollama_row(table: Table, pull: OllamaPullItem) -> None:
    """An Ollama pull in the queue's table: its bytes are summed over the model's layers."""
    share = f"{100 * pull.bytes_done / pull.size:.0f}%" if pull.size else ""
    table.add_row(
        pull.id,
        f"ollama:{pull.model} ({pull.base_url})",
        pull.state.value,
        share,
        format_bytes(pull.size) if pull.size else "",
        f"{format_bytes(pull.speed_bps)}/s" if pull.speed_bps else "",
        _eta(pull.eta_s, pull.stalled),
        pull.error or pull.note or pull.status,
    )


def download_item_view(item: AnyDownloadItem) -> RenderableType:
    note = f": {item.error}" if item.error else ""
    if isinstance(item, OllamaPullItem):
        note = note or (f": {item.note}" if item.note else "")
        return Text(f"{item.id} ollama:{item.model}: {item.state.value}{note}")
    return Text(f"{item.id} {item.path}: {item.state.value}{note}")


def library_view(listing: LibraryList, width: int | None = None) -> RenderableType:
    places = Text(
        "; ".join(
            f"{p.source.value} {p.location}" + ("" if p.available else f" ({p.error or 'absent'})")
            for p in listing.places
        ),
        style="dim",
    )
    if not listing.models:
        return Group(Text("No local models yet: `roundhouse models pull` downloads one."), places)
    models = listing.models
    table = fitted(
        "Local models",
        [
            # The ID is the name requests and commands use (`roundhouse run ID`): whole.
            Column("ID", [m.served_id or m.id for m in models], whole=True),
            Column(
                "Name",
                [Text(m.name + (f" ({m.error})" if m.error else "")) for m in models],
                drop=2,
            ),
            Column("Source", [m.source.value for m in models], drop=5),
            Column("Format", [m.format.value for m in models], drop=6),
            Column("Arch", [m.architecture or "" for m in models], drop=7),
            Column(
                "Params", [m.parameter_label or _count(m.parameter_count) for m in models], drop=3
            ),
            Column("Quant", [m.quantization or "" for m in models], drop=4),
            Column("Ctx", [str(m.context_length or "") for m in models], drop=8),
            Column("Size", [format_bytes(m.size_bytes) for m in models], drop=1),
            Column("Engines", [", ".join(e.value for e in m.engines) for m in models], drop=9),
        ],
        width or console_width(),
    )
    if listing.checking:
        # Listed from their first metadata; the daemon is reading the rest of each header.
        checking = Text(
            f"Reading {listing.checking} more GGUF header(s) in full (exact parameter counts, "
            "files cut short): list again in a moment.",
            style="dim",
        )
        return Group(table, places, checking)
    return Group(table, places)


def library_model_view(model: LibraryModel) -> RenderableType:
    name = model.served_id or model.id
    return Text(f"{name} {model.name}: {format_bytes(model.size_bytes)} at {model.path}")


def delete_view(result: DeleteResult) -> RenderableType:
    verb = "Deleted" if result.executed else "Would delete"
    lines = [f"{verb} {result.name}: {format_bytes(result.freed_bytes)} freed."]
    if result.note:
        lines.append(result.note)
    return Text("\n".join(lines))


_VERDICT_STYLE = {
    FitVerdict.FULL_GPU: "green",
    FitVerdict.PARTIAL_OFFLOAD: "yellow",
    FitVerdict.CPU_ONLY: "yellow",
    FitVerdict.DOES_NOT_FIT: "red",
}


def fit_line(fit: ModelFit) -> Text:
    """One line: the target and the verdict in its colour."""
    head = Text(f"{fit.target}: ", style="bold")
    head.append(fit.report.summary, style=_VERDICT_STYLE.get(fit.report.verdict, ""))
    return head


def fit_view(fit: ModelFit) -> RenderableType:
    report = fit.report
    head = fit_line(fit)
    facts = Text(
        f"{report.engine.value}, context {report.context_length} x {report.n_parallel}, "
        f"-ngl {report.gpu_layers}/{report.total_layers}",
        style="dim",
    )
    table = Table(title="Memory per device", title_justify="left")
    for column in ("Device", "Weights", "KV cache", "Compute", "Runtime", "Total", "Free", ""):
        table.add_column(column)
    for device in report.devices:
        table.add_row(
            device.label,
            format_bytes(device.weights_bytes),
            format_bytes(device.kv_bytes),
            format_bytes(device.compute_bytes),
            format_bytes(device.footprint_bytes),
            format_bytes(device.total_bytes),
            format_bytes(device.free_bytes),
            Text("fits", style="green") if device.fits else Text("short", style="red"),
        )
    parts: list[RenderableType] = [head, facts, table]
    parts += [Text(f"• {a.text}") for a in report.advice]
    return Group(*parts)
