"""Format sizes and durations the same way in the GUI and the CLI."""

from __future__ import annotations

MIB = 1024**2
GIB = 1024**3
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def format_bytes(value: int | float | None) -> str:
    """1536 -> '1.5 KiB'; None -> '—'."""
    if value is None:
        return "—"
    size = float(value)
    for unit in _UNITS:
        if abs(size) < 1024 or unit == _UNITS[-1]:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def format_duration(seconds: float | None) -> str:
    """3725 -> '1h 2m 5s'; None -> '—'."""
    if seconds is None:
        return "—"
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m {secs}s"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{seconds:.1f}s" if seconds < 10 else f"{secs}s"
