"""summarize() and shape_from_gguf() on published model headers and synthetic ones."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import gguf
import pytest
from gguf import GGMLQuantizationType, LlamaFileType

from roundhouse.core.knowledge.gguf import (
    GgufError,
    GgufHeader,
    read_gguf_header,
    shape_from_gguf,
    summarize,
)
from roundhouse.core.knowledge.shape import WeightFormat
from tests.fixtures.models.gguf_headers import (
    GEMMA_2_9B,
    KNOWN_MODELS,
    LLAMA_3_1_8B,
    QWEN_3_30B_A3B,
    q4_k_m_tensors,
    tensor_bytes,
    write_header_only,
    write_known_gguf,
)

Q = GGMLQuantizationType
Setup = Callable[[gguf.GGUFWriter], None]


@pytest.fixture(scope="module")
def known(tmp_path_factory: pytest.TempPathFactory) -> dict[str, GgufHeader]:
    folder = tmp_path_factory.mktemp("known")
    return {
        key: read_gguf_header(write_known_gguf(model, folder, tokenizer=False))
        for key, model in KNOWN_MODELS.items()
    }


def _synthetic(
    tmp_path: Path,
    arch: str,
    setup: Setup,
    *,
    n_layer: int = 4,
    tensors: list[tuple[str, tuple[int, ...], GGMLQuantizationType]] | None = None,
) -> GgufHeader:
    """A header-only file: `setup` adds the metadata; a small tensor per block by default."""
    path = tmp_path / f"{arch}.gguf"
    writer = gguf.GGUFWriter(os.fspath(path), arch=arch)
    writer.add_block_count(n_layer)
    setup(writer)
    if tensors is None:
        tensors = [("token_embd.weight", (32, 8), Q.F16)]
        tensors += [(f"blk.{i}.attn_q.weight", (32, 32), Q.Q8_0) for i in range(n_layer)]
    return read_gguf_header(write_header_only(writer, path, tensors))


def _attention(n_embd: int = 256, n_head: int = 8, n_head_kv: int | list[int] = 2) -> Setup:
    def setup(writer: gguf.GGUFWriter) -> None:
        writer.add_embedding_length(n_embd)
        writer.add_head_count(n_head)
        writer.add_head_count_kv(n_head_kv)
        writer.add_context_length(8192)

    return setup


@pytest.mark.parametrize("key", sorted(KNOWN_MODELS))
def test_known_models_shape(known: dict[str, GgufHeader], key: str) -> None:
    model, header = KNOWN_MODELS[key], known[key]
    shape = shape_from_gguf(header)
    assert shape.format == WeightFormat.GGUF
    assert shape.architecture == model.arch
    assert (shape.n_layer, shape.n_embd) == (model.n_layer, model.n_embd)
    assert (shape.n_head, shape.n_head_kv) == (model.n_head, model.n_head_kv)
    assert shape.key_length == shape.value_length == model.head_dim
    assert shape.context_length == model.context_length
    assert shape.vocab_size == model.vocab
    assert shape.quantization == "Q4_K_M"
    assert (shape.n_expert, shape.n_expert_used) == (model.n_expert, model.n_expert_used)
    expected_layers = [0] * model.n_layer
    expected_other = 0
    for name, dims, ggml_type in q4_k_m_tensors(model):
        size = tensor_bytes(dims, ggml_type)
        if name.startswith("blk."):
            expected_layers[int(name.split(".")[1])] += size
        else:
            expected_other += size
    assert shape.layer_bytes == tuple(expected_layers)
    assert shape.other_bytes == expected_other
    assert shape.weight_bytes == header.tensor_bytes
    assert shape.kv_lora_rank is None and shape.rope_dim is None


def test_known_models_summary(known: dict[str, GgufHeader]) -> None:
    llama = summarize(known[LLAMA_3_1_8B.key])
    assert llama.architecture == "llama"
    assert llama.name == LLAMA_3_1_8B.name and llama.size_label == "8B"
    assert llama.quantization == "Q4_K_M"
    assert 8.02e9 < llama.parameter_count < 8.04e9  # Llama 3.1 8B: 8.03 B
    assert llama.context_length == 131072 and llama.block_count == 32
    assert (llama.head_count, llama.head_count_kv) == (32, 8)
    assert llama.key_length == llama.value_length == 128  # from 4096 / 32: not written
    assert llama.vocab_size == 128256
    assert llama.sliding_window is None
    assert llama.weight_bytes == llama.tensor_bytes < llama.file_size
    qwen3 = summarize(known[QWEN_3_30B_A3B.key])
    assert qwen3.key_length == 128  # written out: 2048 / 32 would say 64
    assert (qwen3.expert_count, qwen3.expert_used_count) == (128, 8)
    assert 30.4e9 < qwen3.parameter_count < 30.6e9  # Qwen3-30B-A3B: 30.5 B
    gemma = summarize(known[GEMMA_2_9B.key])
    assert gemma.sliding_window == 4096
    assert 9.2e9 < gemma.parameter_count < 9.3e9  # gemma-2-9b: 9.24 B


def test_gemma2_windows_every_other_layer(known: dict[str, GgufHeader]) -> None:
    shape = shape_from_gguf(known[GEMMA_2_9B.key])
    assert shape.sliding_window == 4096
    assert shape.swa_layers == tuple(i % 2 == 0 for i in range(42))


def test_gemma2_window_defaults_when_unwritten(tmp_path: Path) -> None:
    shape = shape_from_gguf(_synthetic(tmp_path, "gemma2", _attention()))
    assert shape.sliding_window == 4096
    assert shape.swa_layers == (True, False, True, False)


def test_gemma3_five_windowed_then_one_full(tmp_path: Path) -> None:
    def setup(writer: gguf.GGUFWriter) -> None:
        _attention()(writer)
        writer.add_sliding_window(1024)

    shape = shape_from_gguf(_synthetic(tmp_path, "gemma3", setup, n_layer=12))
    assert shape.sliding_window == 1024
    full = [i for i, windowed in enumerate(shape.swa_layers) if not windowed]
    assert full == [5, 11]


def test_pattern_key_as_period_or_per_layer(tmp_path: Path) -> None:
    def period(writer: gguf.GGUFWriter) -> None:
        _attention()(writer)
        writer.add_sliding_window(512)
        writer.add_sliding_window_pattern(3)

    shape = shape_from_gguf(_synthetic(tmp_path, "cohere2", period, n_layer=6))
    assert shape.swa_layers == (True, True, False, True, True, False)

    def flags(writer: gguf.GGUFWriter) -> None:
        _attention()(writer)
        writer.add_sliding_window(512)
        writer.add_sliding_window_pattern([False, True, True, False])

    shape = shape_from_gguf(_synthetic(tmp_path, "gemma4", flags))
    assert shape.swa_layers == (False, True, True, False)


def test_windows_not_known_to_apply_count_as_full_attention(tmp_path: Path) -> None:
    def setup(writer: gguf.GGUFWriter) -> None:
        _attention()(writer)
        writer.add_sliding_window(2047)

    shape = shape_from_gguf(_synthetic(tmp_path, "phi3", setup))
    assert shape.sliding_window == 2047 and shape.swa_layers == (False,) * 4
    plain = shape_from_gguf(_synthetic(tmp_path, "llama", _attention()))
    assert plain.sliding_window is None and plain.swa_layers == ()

    def no_window(writer: gguf.GGUFWriter) -> None:
        _attention()(writer)
        writer.add_sliding_window(0)

    assert shape_from_gguf(_synthetic(tmp_path, "llama4", no_window)).sliding_window is None
    chunked = shape_from_gguf(_synthetic(tmp_path, "llama4", _attention()))
    assert chunked.sliding_window == 8192
    assert chunked.swa_layers == (True, True, True, False)


def test_kv_heads_per_layer(tmp_path: Path) -> None:
    setup = _attention(n_head_kv=[2, 0, 4, 0])
    header = _synthetic(tmp_path, "jamba", setup)
    shape = shape_from_gguf(header)
    assert shape.n_head_kv == 4
    assert shape.n_head_kv_layers == (2, 0, 4, 0)
    assert shape.key_length == 32  # 256 / 8
    assert summarize(header).head_count_kv == 4


def test_multi_head_latent_attention(tmp_path: Path) -> None:
    def setup(writer: gguf.GGUFWriter) -> None:
        _attention(n_embd=7168, n_head=128, n_head_kv=128)(writer)
        writer.add_kv_lora_rank(512)
        writer.add_rope_dimension_count(64)
        writer.add_key_length(192)
        writer.add_value_length(128)
        writer.add_expert_count(256)
        writer.add_expert_used_count(8)

    shape = shape_from_gguf(_synthetic(tmp_path, "deepseek2", setup))
    assert (shape.kv_lora_rank, shape.rope_dim) == (512, 64)
    assert (shape.key_length, shape.value_length) == (192, 128)
    assert (shape.n_expert, shape.n_expert_used) == (256, 8)


def test_quantization_names(tmp_path: Path) -> None:
    tensors = [
        ("token_embd.weight", (256, 8), Q.Q6_K),
        ("output_norm.weight", (4096,), Q.F32),  # large, but a norm: never "the" type
        ("blk.0.ffn_up.weight", (256, 64), Q.Q4_K),
    ]
    unnamed = _synthetic(tmp_path, "llama", _attention(), n_layer=1, tensors=tensors)
    assert summarize(unnamed).quantization == "Q4_K"

    def f32(writer: gguf.GGUFWriter) -> None:
        _attention()(writer)
        writer.add_file_type(LlamaFileType.ALL_F32)

    assert summarize(_synthetic(tmp_path, "llama", f32)).quantization == "F32"

    def bf16(writer: gguf.GGUFWriter) -> None:
        _attention()(writer)
        writer.add_file_type(LlamaFileType.MOSTLY_BF16)

    assert shape_from_gguf(_synthetic(tmp_path, "llama", bf16)).quantization == "BF16"


def test_blocks_past_the_count_are_other_weights(tmp_path: Path) -> None:
    tensors = [(f"blk.{i}.attn_q.weight", (32, 32), Q.F16) for i in range(3)]
    shape = shape_from_gguf(
        _synthetic(tmp_path, "glm4moe", _attention(), n_layer=2, tensors=tensors)
    )
    assert shape.layer_bytes == (2048, 2048)
    assert shape.other_bytes == 2048


@pytest.mark.parametrize(
    ("arch", "setup", "match"),
    [
        ("llama", lambda w: w.add_type("adapter"), "LoRA adapter"),
        ("clip", lambda w: None, "vision projector"),
        ("", lambda w: None, "architecture"),
    ],
)
def test_files_that_are_not_models(tmp_path: Path, arch: str, setup: Setup, match: str) -> None:
    header = _synthetic(tmp_path, arch or "none", setup)
    if not arch:
        header = GgufHeader(**{**header.__dict__, "metadata": {}})
    with pytest.raises(GgufError, match=match):
        shape_from_gguf(header)


def test_an_absurd_block_count_is_refused(tmp_path: Path) -> None:
    tensors = [("blk.0.attn_q.weight", (32, 32), Q.F16)]
    header = _synthetic(tmp_path, "llama", _attention(), n_layer=2**31, tensors=tensors)
    with pytest.raises(GgufError, match="layers"):
        shape_from_gguf(header)
