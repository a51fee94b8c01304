"""The library's GGUF probes: a quick one that reads the metadata a list shows and stops
before the tokenizer, and a full one that reads the whole header (the exact parameter count,
and every tensor checked against the file's size)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from roundhouse.core.knowledge.gguf import (
    GgufHeader,
    GgufValue,
    read_gguf_header,
    read_gguf_metadata,
    summarize,
)
from roundhouse.core.knowledge.gguf.constants import Keys
from roundhouse.core.knowledge.gguf.summary import file_type_name
from roundhouse.core.models.library.facts import ModelFacts


def probe_gguf(path: Path) -> ModelFacts:
    """Facts from the whole header (milliseconds, whatever the file's size: most of them go
    to stepping over the tokenizer's arrays); raises GgufError for a malformed file and
    NotFoundError when it is gone."""
    return _whole(read_gguf_header(path))


def probe_gguf_quick(path: Path) -> ModelFacts:
    """What a list shows, from the metadata entries converters write first (architecture,
    name, size label, context length, file type): a tenth of a millisecond instead of ten.
    A file without them all gets the full read. The result is marked unchecked: the tensor
    table (exact count, a file cut short) is read later by `probe_gguf`."""
    header = read_gguf_metadata(path, _listing_known)
    if header.complete:
        return _whole(header)
    arch = header.architecture
    return ModelFacts(
        architecture=_short(arch),
        name=_short(header.str_value(Keys.General.NAME), 200),
        parameter_label=_short(header.str_value(Keys.General.SIZE_LABEL)),
        quantization=_short(file_type_name(header.int_value(Keys.General.FILE_TYPE))),
        context_length=header.int_value(header.arch_key("context_length")),
        checked=False,
    )


def _listing_known(metadata: Mapping[str, GgufValue]) -> bool:
    arch = metadata.get(Keys.General.ARCHITECTURE)
    if not isinstance(arch, str):
        return False
    return all(
        key in metadata
        for key in (f"{arch}.context_length", Keys.General.FILE_TYPE, Keys.General.SIZE_LABEL)
    )


def _whole(header: GgufHeader) -> ModelFacts:
    summary = summarize(header)
    arch = summary.architecture if summary.architecture != "unknown" else None
    return ModelFacts(
        architecture=_short(arch),
        name=_short(summary.name, 200),
        parameter_count=summary.parameter_count or None,
        parameter_label=_short(summary.size_label),
        quantization=_short(summary.quantization),
        context_length=summary.context_length,
    )


def _short(text: str | None, limit: int = 64) -> str | None:
    """Header strings are the file's to choose: a list shows no megabyte-long ones."""
    return text[:limit] if text else None
