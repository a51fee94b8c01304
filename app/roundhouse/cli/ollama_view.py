"""Render Ollama's models, loaded models and one model's details as rich tables."""

from __future__ import annotations

import json

from rich.table import Table

from roundhouse.api.ollama import OllamaLoadedList, OllamaModelList, OllamaShownModel
from roundhouse.base.units import format_bytes


def models_view(answer: OllamaModelList) -> Table | str:
    if not answer.models:
        return (
            f"Ollama at {answer.base_url} has no models. Pull one: `roundhouse ollama pull NAME`."
        )
    table = Table(title=f"Ollama models ({answer.base_url})", title_justify="left")
    for column in ("Name", "Size", "Parameters", "Quantization", "Family", "Modified"):
        table.add_column(column)
    for model in answer.models:
        details = model.details
        modified = model.modified_at.strftime("%Y-%m-%d %H:%M") if model.modified_at else "—"
        table.add_row(
            model.name,
            format_bytes(model.size),
            details.parameter_size or "—",
            details.quantization_level or "—",
            details.family or "—",
            modified,
        )
    return table


def loaded_view(answer: OllamaLoadedList) -> Table | str:
    if not answer.models:
        return f"Ollama at {answer.base_url} has no model loaded."
    table = Table(title=f"Loaded in Ollama ({answer.base_url})", title_justify="left")
    for column in ("Name", "Memory", "On GPU", "Context", "Until"):
        table.add_column(column)
    for model in answer.models:
        share = f"{model.gpu_share:.0%} ({format_bytes(model.size_vram)})"
        until = model.expires_at.strftime("%Y-%m-%d %H:%M") if model.expires_at else "—"
        context = str(model.context_length) if model.context_length else "—"
        table.add_row(model.name, format_bytes(model.size), share, context, until)
    return table


def shown_view(model: OllamaShownModel) -> Table:
    table = Table(title=model.name, title_justify="left", show_header=False)
    table.add_column("Field", style="bold")
    table.add_column("Value")
    details = model.details
    table.add_row("Family", details.family or "—")
    table.add_row("Parameters", details.parameter_size or "—")
    table.add_row("Quantization", details.quantization_level or "—")
    table.add_row("Capabilities", ", ".join(model.capabilities) or "—")
    if model.parameters:
        table.add_row("Modelfile parameters", model.parameters.strip())
    for key, value in sorted(model.model_info.items()):
        if isinstance(value, list):
            continue  # tokenizer vocabularies: thousands of entries
        table.add_row(key, json.dumps(value) if not isinstance(value, str) else value)
    return table
