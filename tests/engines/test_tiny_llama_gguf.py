"""The generated tiny GGUF has the shapes llama.cpp expects and is byte-for-byte repeatable."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import gguf
import pytest

from tests.engines import llama_server
from tests.fixtures.models import tiny_llama
from tests.fixtures.models.tiny_llama import write_tiny_llama_gguf


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_same_seed_same_bytes_in_a_non_ascii_folder(tmp_path: Path) -> None:
    folder = tmp_path / "модели 模型 tiny"
    folder.mkdir()
    first = write_tiny_llama_gguf(folder / "a.gguf", seed=7)
    second = write_tiny_llama_gguf(folder / "b.gguf", seed=7)
    other = write_tiny_llama_gguf(folder / "c.gguf", seed=8)
    assert _digest(first) == _digest(second) != _digest(other)
    assert 300_000 < first.stat().st_size < 700_000


def test_tensors_and_metadata_match_the_llama_loader(tmp_path: Path) -> None:
    reader = gguf.GGUFReader(write_tiny_llama_gguf(tmp_path / "tiny.gguf"))
    n_vocab = len(tiny_llama.build_vocab()[0])
    e, ff, kv = tiny_llama.N_EMBD, tiny_llama.N_FF, tiny_llama.HEAD_DIM * tiny_llama.N_HEAD_KV
    # GGUF lists dimensions innermost first, as llama.cpp's create_tensor calls do.
    expected = {
        "token_embd.weight": [e, n_vocab],
        "output_norm.weight": [e],
        "output.weight": [e, n_vocab],
    }
    for i in range(tiny_llama.N_LAYER):
        expected |= {
            f"blk.{i}.attn_norm.weight": [e],
            f"blk.{i}.attn_q.weight": [e, e],
            f"blk.{i}.attn_k.weight": [e, kv],
            f"blk.{i}.attn_v.weight": [e, kv],
            f"blk.{i}.attn_output.weight": [e, e],
            f"blk.{i}.ffn_norm.weight": [e],
            f"blk.{i}.ffn_gate.weight": [e, ff],
            f"blk.{i}.ffn_up.weight": [e, ff],
            f"blk.{i}.ffn_down.weight": [ff, e],
        }
    actual = {t.name: [int(d) for d in t.shape] for t in reader.tensors}
    assert actual == expected
    assert all(t.tensor_type == gguf.GGMLQuantizationType.F32 for t in reader.tensors)

    def field(name: str) -> Any:
        return reader.fields[name].contents()

    assert field("general.architecture") == "llama"
    assert field("llama.attention.head_count") == 4
    assert field("llama.attention.head_count_kv") == 2
    assert field("tokenizer.ggml.model") == "gpt2"
    tokens = field("tokenizer.ggml.tokens")
    assert isinstance(tokens, list)
    assert 280 <= len(tokens) <= 320
    assert tokens[field("tokenizer.ggml.eos_token_id")] == "<|im_end|>"
    assert "<|im_start|>" in tokens
    assert "<|im_start|>" in str(field("tokenizer.chat_template"))

    # Special tokens have all-zero output rows so greedy replies never stop early.
    output = next(t for t in reader.tensors if t.name == "output.weight")
    special = [i for i, t in enumerate(field("tokenizer.ggml.token_type")) if t != 1]
    assert len(special) == 3
    assert not output.data[special].any()


def test_find_llama_server_prefers_the_env_var(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(llama_server.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.delenv(llama_server.ENV_BINARY, raising=False)
    assert llama_server.find_llama_server() is None
    assert llama_server.cached_binary() == (
        tmp_path / "cache/llama-server/llama-cpp-python-0.3.36/bin/llama-server"
    )
    fake = tmp_path / "llama-server"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv(llama_server.ENV_BINARY, str(fake))
    assert llama_server.find_llama_server() == fake
    assert llama_server.binary_runs(fake)
