"""What an instance's draft model and LoRA adapters add to its fit estimate (ADR 48)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from roundhouse.api.engines import InstanceOptions
from roundhouse.api.fit import FitOptions
from roundhouse.api.library import LibraryModel
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.knowledge.fit import kv_bytes_per_token
from roundhouse.core.knowledge.fit.estimate import context_for
from roundhouse.core.knowledge.gguf import GgufError, read_gguf_header
from roundhouse.core.knowledge.gguf.tokenizer import tokenizer_mismatch
from roundhouse.core.knowledge.shape import ModelShape

DraftShape = Callable[[str], Awaitable[ModelShape]]


async def capability_costs(
    instance: InstanceOptions,
    options: FitOptions,
    shape: ModelShape,
    model: LibraryModel,
    draft_shape: DraftShape,
) -> tuple[FitOptions, list[str]]:
    """`options` with the draft's weights and cache and the adapters' size, and notes."""
    notes: list[str] = []
    update: dict[str, int] = {}
    if instance.lora:
        sizes = await asyncio.gather(*(asyncio.to_thread(_size, a.path) for a in instance.lora))
        update["adapter_bytes"] = sum(sizes)
    draft = instance.draft_model
    here = bool(draft) and await asyncio.to_thread(_exists, draft or "")
    if draft and here:
        dshape = await draft_shape(draft)
        ctx = context_for(shape, options) * options.n_parallel
        per_token = kv_bytes_per_token(dshape, options.cache_type_k, options.cache_type_v)
        update["draft_bytes"] = dshape.weight_bytes + per_token * ctx
        why = await asyncio.to_thread(_mismatch, model, draft)
        if why:
            notes.append(
                f"The draft model does not share the model's tokenizer ({why}): the engine "
                "will refuse it. Choose a smaller model of the same family."
            )
    elif draft:
        notes.append(f"The draft model {draft} is not on this machine: it is not counted.")
    return options.model_copy(update=update), notes


def _exists(path: str) -> bool:
    return Path(path).expanduser().exists()


def _size(path: str) -> int:
    where = Path(path).expanduser()
    if where.is_file():
        return where.stat().st_size
    if where.is_dir():
        return sum(f.stat().st_size for f in where.rglob("*") if f.is_file())
    raise InvalidInputError(f"There is no LoRA adapter at {path}: give the adapter's file.")


def _mismatch(model: LibraryModel, draft: str) -> str | None:
    first = (model.paths or [model.path or ""])[0]
    if not first.endswith(".gguf") or not draft.lower().endswith(".gguf"):
        return None
    try:
        return tokenizer_mismatch(read_gguf_header(Path(first)), read_gguf_header(Path(draft)))
    except (GgufError, OSError):
        return None
