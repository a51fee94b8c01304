"""Ollama's models and loaded models as table rows, in words; and the table views for them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from roundhouse.api.ollama import OllamaLoadedModel, OllamaModel
from roundhouse.base.units import format_bytes, format_duration
from roundhouse.gui.widgets.keyed_table_model import Row

MODEL_HEADERS = ("Name", "Size", "Parameters", "Quantization", "Family", "Modified")
LOADED_HEADERS = ("Name", "Memory", "On the GPU", "Context", "Until")
# Ollama answers keep_alive -1 with an expiry centuries ahead.
FOREVER_AFTER = timedelta(days=3650)


def _local(moment: datetime) -> datetime:
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return aware.astimezone()


def modified_in_words(moment: datetime | None) -> str:
    return _local(moment).strftime("%Y-%m-%d %H:%M") if moment is not None else "—"


def until_in_words(expires_at: datetime | None, now: datetime) -> str:
    """'kept loaded', '14:05 (in 4m 10s)', or '—' when Ollama does not say."""
    if expires_at is None:
        return "—"
    left = (expires_at - now).total_seconds()
    if left > FOREVER_AFTER.total_seconds():
        return "kept loaded"
    if left <= 0:
        return "unloading"
    return f"{_local(expires_at).strftime('%H:%M')} (in {format_duration(left)})"


def gpu_share_in_words(model: OllamaLoadedModel) -> str:
    """'100% (8.0 GiB)'; all on the CPU says so, the first thing to check when Ollama is slow."""
    if model.size_vram <= 0:
        return "0% (all on the CPU)"
    return f"{model.gpu_share:.0%} ({format_bytes(model.size_vram)})"


def model_row(model: OllamaModel) -> Row:
    details = model.details
    texts = (
        model.name,
        format_bytes(model.size),
        details.parameter_size or "—",
        details.quantization_level or "—",
        details.family or "—",
        modified_in_words(model.modified_at),
    )
    tooltip = f"{model.name}\n{model.digest}"
    return Row(model.name, texts, model, (tooltip,))


def loaded_row(model: OllamaLoadedModel, now: datetime) -> Row:
    context = f"{model.context_length:,}" if model.context_length else "—"
    texts = (
        model.name,
        format_bytes(model.size),
        gpu_share_in_words(model),
        context,
        until_in_words(model.expires_at, now),
    )
    memory_tip = "Weights and KV cache, in GPU and system memory together"
    share_tip = f"{format_bytes(model.size_vram)} of {format_bytes(model.size)} in GPU memory"
    return Row(model.name, texts, model, (None, memory_tip, share_tip))
