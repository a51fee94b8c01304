"""The library's GGUF probe: the header reader and summary of roundhouse.core.models.gguf."""

from __future__ import annotations

from pathlib import Path

from roundhouse.core.models.gguf import read_gguf_header, summarize
from roundhouse.core.models.library.facts import GgufProbe, ModelFacts


def probe_gguf(path: Path) -> ModelFacts:
    """Facts from the header only (milliseconds, whatever the file's size); raises GgufError
    for a malformed file and NotFoundError when it is gone."""
    summary = summarize(read_gguf_header(path))
    arch = summary.architecture if summary.architecture != "unknown" else None
    return ModelFacts(
        architecture=_short(arch),
        name=_short(summary.name, 200),
        parameter_count=summary.parameter_count or None,
        quantization=_short(summary.quantization),
        context_length=summary.context_length,
    )


def _short(text: str | None, limit: int = 64) -> str | None:
    """Header strings are the file's to choose: a list shows no megabyte-long ones."""
    return text[:limit] if text else None


def default_gguf_probe() -> GgufProbe:
    return probe_gguf
