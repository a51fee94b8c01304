"""Library models as table rows, and what a deletion removes, in words."""

from __future__ import annotations

from roundhouse.api.library import DeleteResult, LibraryModel, LibrarySource
from roundhouse.base.units import format_bytes
from roundhouse.gui.widgets.keyed_table_model import Row
from roundhouse.gui.widgets.models_words import params_in_words

HEADERS = (
    "Name",
    "Status",
    "Source",
    "Format",
    "Architecture",
    "Parameters",
    "Quantization",
    "Context",
    "Size",
    "Engines",
    "Fit",
)
SOURCE_NAMES = {
    LibrarySource.HF_CACHE: "Hugging Face cache",
    LibrarySource.FOLDER: "folder",
    LibrarySource.LMSTUDIO: "LM Studio",
    LibrarySource.OLLAMA: "Ollama",
}
STATUS_COLUMN = HEADERS.index("Status")
RIGHT_ALIGNED = frozenset(HEADERS.index(h) for h in ("Parameters", "Context", "Size"))
# A confirmation lists this many paths, then says how many more.
LISTED_PATHS = 8


def library_row(model: LibraryModel, status: str = "") -> Row:
    """The row of `model`; `status`: its engine's state in words ('' when none runs it)."""
    name = f"⚠ {model.name}" if model.error else model.name
    texts = (
        name,
        status,
        SOURCE_NAMES.get(model.source, model.source.value),
        model.format.value,
        model.architecture or "—",
        model.parameter_label or params_in_words(model.parameter_count),
        model.quantization or "—",
        f"{model.context_length:,}" if model.context_length else "—",
        format_bytes(model.size_bytes),
        ", ".join(engine.value for engine in model.engines) or "—",
        "",
    )
    about = [model.path or "", model.error or ""]
    if model.projector:
        about.append(f"Projector: {model.projector}")
    if model.repo:
        about.append(f"From {model.repo}" + (f" ({', '.join(model.refs)})" if model.refs else ""))
    tooltip = "\n".join(line for line in about if line) or None
    return Row(model.id, texts, model, (tooltip,))


def deletion_in_words(plan: DeleteResult) -> str:
    """What will go: the paths (a few, then a count) and the daemon's note."""
    lines = [f"Removes {len(plan.removed)} file(s) and folder(s):"] if plan.removed else []
    lines += [f"• {path}" for path in plan.removed[:LISTED_PATHS]]
    if len(plan.removed) > LISTED_PATHS:
        lines.append(f"… and {len(plan.removed) - LISTED_PATHS} more.")
    if plan.note:
        lines.append(plan.note)
    lines.append("This cannot be undone; download or import it again to use it.")
    return "\n".join(lines)
