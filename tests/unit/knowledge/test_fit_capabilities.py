"""The fit with the engines' capabilities: MoE experts in RAM, a draft model, LoRA adapters."""

from __future__ import annotations

import os
from pathlib import Path

import gguf
from gguf import GGMLQuantizationType as Q

from roundhouse.api.fit import AdviceKind, DeviceKind, FitOptions, FitReport, FitVerdict
from roundhouse.core.knowledge.fit import estimate_fit
from roundhouse.core.knowledge.gguf import read_gguf_header, shape_from_gguf
from roundhouse.core.knowledge.gguf.tokenizer import tokenizer_mismatch
from roundhouse.core.knowledge.shape import ModelShape, WeightFormat
from tests.fixtures.models.gguf_headers import write_header_only
from tests.unit.knowledge.test_fit_cases import GIB, llama_3_1_8b_q4_k_m, machine, nvidia, rtx_3070

CTX = FitOptions(context_length=8192)


def qwen3_30b_a3b() -> ModelShape:
    """Qwen3-30B-A3B Q4_K_M: 48 blocks of 128 experts (8 used), 17.3 GiB, experts ~93 %."""
    block = int(17.0 * GIB) // 48
    embd = 151936 * 2048 * 9 // 16
    return ModelShape(
        format=WeightFormat.GGUF,
        architecture="qwen3moe",
        n_layer=48,
        n_embd=2048,
        n_head=32,
        n_head_kv=4,
        key_length=128,
        value_length=128,
        context_length=40960,
        layer_bytes=(block,) * 48,
        other_bytes=2 * embd,
        vocab_size=151936,
        n_expert=128,
        n_expert_used=8,
        feed_forward_length=8 * 768,
        embedding_bytes=embd,
        output_bytes=embd,
        expert_bytes=(block * 93 // 100,) * 48,
    )


def ram(report: FitReport) -> int:
    return next(d.weights_bytes for d in report.devices if d.kind == DeviceKind.CPU)


def gpu(report: FitReport) -> int:
    return sum(d.weights_bytes for d in report.devices if d.kind == DeviceKind.GPU)


def test_the_estimate_proposes_the_n_cpu_moe_that_fits() -> None:
    shape, card = qwen3_30b_a3b(), rtx_3070()
    report = estimate_fit(shape, card, CTX)
    assert report.verdict == FitVerdict.PARTIAL_OFFLOAD
    # It comes first: for a mixture of experts it beats offloading whole blocks.
    first = report.advice[0]
    assert first.kind == AdviceKind.CPU_MOE and isinstance(first.value, int)
    n = first.value
    assert 0 < n < 48 and f"--n-cpu-moe {n}" in first.text
    every = CTX.model_copy(update={"gpu_layers": 49})
    fits = estimate_fit(shape, card, every.model_copy(update={"n_cpu_moe": n}))
    assert fits.verdict == FitVerdict.FULL_GPU and all(d.fits for d in fits.devices)
    short = estimate_fit(shape, card, every.model_copy(update={"n_cpu_moe": n - 1}))
    assert short.verdict == FitVerdict.DOES_NOT_FIT


def test_experts_in_ram_move_from_the_gpu_to_ram() -> None:
    shape, card = qwen3_30b_a3b(), machine([nvidia(0, 80 * GIB, 79 * GIB)], 64 * GIB, 60 * GIB)
    every = CTX.model_copy(update={"gpu_layers": 49})
    base = estimate_fit(shape, card, every)
    moved = estimate_fit(shape, card, every.model_copy(update={"n_cpu_moe": 10}))
    experts = 10 * shape.expert_bytes[0]
    assert gpu(base) - gpu(moved) == experts
    assert ram(moved) - ram(base) == experts
    # It fits as it is: the advice says none need stay in RAM.
    assert moved.advice[0].kind == AdviceKind.CPU_MOE and moved.advice[0].value == 0
    assert AdviceKind.CPU_MOE not in {a.kind for a in base.advice}


def test_a_dense_model_gets_no_moe_advice() -> None:
    report = estimate_fit(llama_3_1_8b_q4_k_m(), rtx_3070(), FitOptions(context_length=32768))
    assert AdviceKind.CPU_MOE not in {a.kind for a in report.advice}


def test_the_draft_and_the_adapters_count() -> None:
    shape, card = llama_3_1_8b_q4_k_m(), machine([nvidia(0, 24 * GIB, 23 * GIB)])
    base = estimate_fit(shape, card, CTX)
    draft = estimate_fit(shape, card, CTX.model_copy(update={"draft_bytes": 2 * GIB}))
    assert gpu(draft) - gpu(base) == 2 * GIB and ram(draft) == ram(base)
    lora = estimate_fit(shape, card, CTX.model_copy(update={"adapter_bytes": 320 * 2**20}))
    # Every block is on the GPU: the adapters are too.
    assert gpu(lora) - gpu(base) == 320 * 2**20
    cpu = estimate_fit(shape, machine([]), CTX.model_copy(update={"draft_bytes": GIB}))
    assert ram(cpu) - ram(estimate_fit(shape, machine([]), CTX)) == GIB


def _gguf(path: Path, tokenizer: str, pre: str, n_vocab: int, experts: bool) -> Path:
    writer = gguf.GGUFWriter(os.fspath(path), arch="qwen3moe")
    writer.add_block_count(2)
    writer.add_tokenizer_model(tokenizer)
    writer.add_tokenizer_pre(pre)
    writer.add_vocab_size(n_vocab)
    tensors: list[tuple[str, tuple[int, ...], Q]] = [("token_embd.weight", (32, 8), Q.F16)]
    for i in range(2):
        tensors.append((f"blk.{i}.attn_q.weight", (32, 32), Q.Q8_0))
        if experts:
            for part in ("up", "gate", "down"):
                tensors.append((f"blk.{i}.ffn_{part}_exps.weight", (32, 32, 4), Q.Q8_0))
    return write_header_only(writer, path, tensors)


def test_a_gguf_header_gives_each_blocks_expert_bytes(tmp_path: Path) -> None:
    moe = shape_from_gguf(read_gguf_header(_gguf(tmp_path / "m.gguf", "gpt2", "qwen2", 100, True)))
    attention = 32 * 32 * 34 // 32  # q8_0: 34 bytes per 32 weights
    assert moe.expert_bytes == (3 * 4 * attention,) * 2
    assert moe.layer_bytes == (attention + 3 * 4 * attention,) * 2
    dense = shape_from_gguf(
        read_gguf_header(_gguf(tmp_path / "d.gguf", "gpt2", "qwen2", 100, False))
    )
    assert dense.expert_bytes == ()


def test_a_draft_must_share_the_tokenizer(tmp_path: Path) -> None:
    model = read_gguf_header(_gguf(tmp_path / "a.gguf", "gpt2", "qwen2", 151936, False))
    same = read_gguf_header(_gguf(tmp_path / "b.gguf", "gpt2", "qwen2", 151900, False))
    other = read_gguf_header(_gguf(tmp_path / "c.gguf", "llama", "default", 32000, False))
    far = read_gguf_header(_gguf(tmp_path / "e.gguf", "gpt2", "qwen2", 150000, False))
    assert tokenizer_mismatch(model, same) is None
    assert tokenizer_mismatch(model, other) == "the draft's tokenizer is llama, the model's gpt2"
    assert tokenizer_mismatch(model, far) == "the draft knows 150,000 tokens, the model 151,936"
