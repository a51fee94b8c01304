"""The fit estimate counts a start's draft model (weights and cache) and LoRA adapters, and
says when the draft does not share the model's tokenizer (ADR 48)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import gguf
import numpy as np
import pytest

from roundhouse.api.engines import InstanceOptions, LoraAdapter
from roundhouse.api.fit import CacheType, FitQuery, FitReport
from roundhouse.api.hardware import HardwareInventory
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.knowledge.fit import kv_bytes_per_token
from roundhouse.core.knowledge.gguf import read_gguf_header, shape_from_gguf
from roundhouse.core.models.fitter import ModelFitter
from roundhouse.core.models.library.places import LibraryPlaces
from roundhouse.core.models.library.service import LibraryService
from tests.fixtures.models.tiny_adapters import write_tiny_lora_gguf, write_tiny_moe_gguf
from tests.fixtures.models.tiny_llama import write_tiny_llama_gguf
from tests.unit.knowledge.test_fit_cases import rtx_3070


def _fit(model: Path, instance: InstanceOptions) -> FitReport:
    async def hardware() -> HardwareInventory:
        return rtx_3070()

    library = LibraryService(lambda: LibraryPlaces(model.parent / "cache", ()))
    fitter = ModelFitter(None, library, hardware)  # type: ignore[arg-type]  # no Hub asked
    return asyncio.run(fitter.fit(FitQuery(path=str(model), instance=instance))).report


def test_the_draft_and_the_adapters_are_counted(tmp_path: Path) -> None:
    model = write_tiny_moe_gguf(tmp_path / "moe.gguf")
    draft = write_tiny_llama_gguf(tmp_path / "draft.gguf", seed=3)
    adapter = write_tiny_lora_gguf(tmp_path / "lora.gguf")
    base = InstanceOptions(model=str(model), ctx_size=512)
    bare = _fit(model, base)
    drafted = _fit(model, base.model_copy(update={"draft_model": str(draft)}))
    shape = shape_from_gguf(read_gguf_header(draft))
    cache = kv_bytes_per_token(shape, CacheType.F16, CacheType.F16) * 512
    assert drafted.weights_bytes + drafted.kv_bytes - bare.weights_bytes - bare.kv_bytes == (
        shape.weight_bytes + cache
    )
    # The same tokenizer (both the tiny vocabulary): no word about it.
    assert not any("tokenizer" in a for a in drafted.assumptions)
    adapted = _fit(model, base.model_copy(update={"lora": (LoraAdapter(path=str(adapter)),)}))
    assert adapted.weights_bytes - bare.weights_bytes == adapter.stat().st_size


def test_a_draft_of_another_family_is_named(tmp_path: Path) -> None:
    model = write_tiny_llama_gguf(tmp_path / "tiny.gguf")
    other = tmp_path / "other.gguf"
    writer = gguf.GGUFWriter(os.fspath(other), arch="llama")
    writer.add_block_count(1)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_tensor("token_embd.weight", np.zeros((8, 4), dtype="float32"))
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((4, 4), dtype="float32"))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    report = _fit(model, InstanceOptions(model=str(model), ctx_size=512, draft_model=str(other)))
    assert any(
        "does not share the model's tokenizer (the draft's tokenizer is llama, the model's gpt2)"
        in a
        for a in report.assumptions
    ), report.assumptions


def test_a_missing_adapter_is_refused_in_words(tmp_path: Path) -> None:
    model = write_tiny_llama_gguf(tmp_path / "tiny.gguf")
    options = InstanceOptions(model=str(model), lora=(LoraAdapter(path=str(tmp_path / "x")),))
    with pytest.raises(InvalidInputError, match="There is no LoRA adapter at"):
        _fit(model, options)
