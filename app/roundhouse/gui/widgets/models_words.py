"""The Models page's figures in words: counts, parameters, fit badges, download progress."""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from roundhouse.api.downloads import AnyDownloadItem, DownloadItem, DownloadState
from roundhouse.api.fit import DeviceFit, DeviceKind, FitReport, FitVerdict
from roundhouse.api.hub import HubModelKind
from roundhouse.base.units import format_bytes, format_duration

KIND_NAMES = {
    HubModelKind.GGUF: "GGUF",
    HubModelKind.MLX: "MLX",
    HubModelKind.SAFETENSORS: "safetensors",
}
STATE_NAMES = {
    DownloadState.QUEUED: "queued",
    DownloadState.DOWNLOADING: "downloading",
    DownloadState.PAUSED: "paused",
    DownloadState.VERIFYING: "checking sha256",
    DownloadState.DONE: "done",
    DownloadState.FAILED: "failed",
    DownloadState.CANCELLED: "cancelled",
    DownloadState.QUARANTINED: "quarantined",
}


class Tone(StrEnum):
    """A badge's colour, by what it means."""

    GOOD = "good"
    WARN = "warn"
    BAD = "bad"
    UNKNOWN = "unknown"
    # Right for this machine, nothing to act on: the CPU where there is no GPU.
    NEUTRAL = "neutral"


@dataclass(frozen=True)
class Badge:
    text: str
    tone: Tone
    tooltip: str = ""


ESTIMATING = Badge("estimating…", Tone.UNKNOWN, "Asking the daemon whether it fits this machine")


def count_in_words(value: int | None) -> str:
    """5000 -> '5.0k', 1_234_567 -> '1.2M'."""
    if value is None:
        return "—"
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:.1f}{unit}"
    return str(value)


def params_in_words(value: int | None) -> str:
    """8_030_261_248 -> '8.0B', 12_350_000 -> '12.3M'; unknown: '—'."""
    if not value:
        return "—"
    for size, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if value >= size:
            return f"{value / size:.1f}{unit}"
    return str(value)


def date_in_words(moment: datetime | None) -> str:
    return moment.astimezone().strftime("%Y-%m-%d") if moment is not None else "—"


def kinds_in_words(kinds: list[HubModelKind]) -> str:
    return ", ".join(KIND_NAMES.get(kind, kind.value) for kind in kinds) or "—"


# -- will it fit ------------------------------------------------------------------------


def fit_badge(report: FitReport) -> Badge:
    """Green on the GPU, yellow partly or on the CPU of a machine with a GPU, neutral on the
    CPU of one without (the best it has), red when it does not fit."""
    tooltip = fit_details(report)
    if cpu_is_all_there_is(report):
        return Badge("runs on CPU", Tone.NEUTRAL, tooltip)
    match report.verdict:
        case FitVerdict.FULL_GPU:
            return Badge("fits on GPU", Tone.GOOD, tooltip)
        case FitVerdict.PARTIAL_OFFLOAD:
            layers = f"{report.gpu_layers}/{report.total_layers} layers"
            return Badge(f"partial {layers}", Tone.WARN, tooltip)
        case FitVerdict.CPU_ONLY:
            return Badge("CPU only", Tone.WARN, tooltip)
        case _:
            return Badge("does not fit", Tone.BAD, tooltip)


def cpu_is_all_there_is(report: FitReport) -> bool:
    """Runs on the CPU, and the machine has no GPU the engine could use: no warning."""
    return report.verdict == FitVerdict.CPU_ONLY and not any(
        device.kind == DeviceKind.GPU for device in report.devices
    )


def failed_badge(reason: str) -> Badge:
    return Badge("fit unknown", Tone.UNKNOWN, f"Not estimated: {reason}")


def device_in_words(device: DeviceFit) -> str:
    """'GPU 0 (…): 6.1 GiB of 23.6 GiB free — 29 layers (weights 4.0 GiB, KV 1.0 GiB, …)'."""
    parts = [
        f"weights {format_bytes(device.weights_bytes)}",
        f"KV cache {format_bytes(device.kv_bytes)}",
        f"compute {format_bytes(device.compute_bytes)}",
        f"runtime {format_bytes(device.footprint_bytes)}",
    ]
    layers = f", {device.layers} layers" if device.layers else ""
    fits = "" if device.fits else ", too much"
    line = (
        f"{device.label}: needs {format_bytes(device.total_bytes)} of "
        f"{format_bytes(device.free_bytes)} free{layers}{fits} ({', '.join(parts)})"
    )
    return f"{line}. {device.note}" if device.note else line


def fit_details(report: FitReport, *, assumptions: bool = True) -> str:
    """The summary, each device's share, the advice and the assumptions, in plain lines."""
    lines = [report.summary, ""]
    lines.append(
        f"Context {report.context_length:,} tokens × {report.n_parallel} slot(s); "
        f"{format_bytes(report.total_bytes)} in all."
    )
    lines += [device_in_words(device) for device in report.devices]
    if report.advice:
        lines += ["", "To make it fit better:"]
        lines += [f"• {advice.text}" for advice in report.advice]
    if assumptions and report.assumptions:
        lines += ["", "Assumed:"]
        lines += [f"• {assumption}" for assumption in report.assumptions]
    return "\n".join(lines)


def fit_details_html(report: FitReport) -> str:
    """`fit_details` without the assumptions, for a rich-text label: the summary in bold."""
    text = fit_details(report, assumptions=False)
    first, _, rest = text.partition("\n")
    body = html.escape(rest.strip()).replace("\n", "<br>")
    return f"<b>{html.escape(first)}</b><br>{body}"


# -- downloads ----------------------------------------------------------------------------


def progress_in_words(item: AnyDownloadItem) -> str:
    """'4.1 MiB of 8.0 MiB (51%)'."""
    if item.size <= 0:
        return format_bytes(item.bytes_done)
    share = min(1.0, item.bytes_done / item.size)
    return f"{format_bytes(item.bytes_done)} of {format_bytes(item.size)} ({share:.0%})"


def rate_in_words(item: AnyDownloadItem) -> str:
    """'2.0 MiB/s, 3s left', 'stalled, retrying', or '' when not transferring."""
    if item.state != DownloadState.DOWNLOADING:
        return ""
    if item.stalled:
        # A file is retried by the daemon; an Ollama pull waits on Ollama.
        return "stalled, retrying" if isinstance(item, DownloadItem) else "stalled"
    speed = f"{format_bytes(item.speed_bps)}/s"
    return f"{speed}, {format_duration(item.eta_s)} left" if item.eta_s is not None else speed


def item_line(item: AnyDownloadItem) -> str:
    """The line under an item's bar: state, bytes, and speed while it transfers."""
    parts = [STATE_NAMES.get(item.state, item.state.value), progress_in_words(item)]
    rate = rate_in_words(item)
    if rate:
        parts.append(rate)
    return " · ".join(parts)
