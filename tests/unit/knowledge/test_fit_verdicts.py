"""Verdicts and breakdowns on synthetic machines: one GPU, a small GPU, none, a Mac, two."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from pydantic import ValidationError

from roundhouse.api.fit import (
    CacheType,
    DeviceKind,
    FitEngine,
    FitOptions,
    FitReport,
    FitVerdict,
)
from roundhouse.api.hardware import GpuInfo, GpuVendor
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.knowledge.fit import estimate_fit, place
from roundhouse.core.knowledge.hf_config import shape_from_hf_config
from roundhouse.core.knowledge.shape import WeightFormat
from tests.unit.knowledge.test_fit_cases import (
    APPLE_CAP,
    GIB,
    MIB,
    cpu_only,
    gemma_2_9b,
    llama_3_1_8b_q4_k_m,
    llama_3_1_70b_q4_k_m,
    mac_16gb,
    machine,
    nvidia,
    rtx_3070,
    rtx_4090,
    two_3090s,
)
from tests.unit.knowledge.test_fit_hf_config import LLAMA_3_1_8B, LLAMA_3_2_3B_MLX_4BIT

CTX_8K = FitOptions(context_length=8192)
CTX_32K = FitOptions(context_length=32768)


def gpu(report: FitReport, index: int = 0) -> int:
    """What the report puts on GPU `index`."""
    return next(d.total_bytes for d in report.devices if d.index == index)


def ram(report: FitReport) -> int:
    return next(d.total_bytes for d in report.devices if d.kind == DeviceKind.CPU)


def test_full_gpu_on_a_24_gb_card() -> None:
    report = estimate_fit(llama_3_1_8b_q4_k_m(), rtx_4090(), CTX_8K)
    assert report.verdict == FitVerdict.FULL_GPU
    assert (report.gpu_layers, report.total_layers) == (33, 33)
    card = report.devices[0]
    assert card.layers == 32 and card.fits
    # Blocks + output (the CUDA0 model buffer), 1 GiB of KV, the compute buffer, CUDA.
    assert card.weights_bytes == pytest.approx(4403.49 * MIB, rel=1e-4)
    assert card.kv_bytes == GIB
    assert card.compute_bytes == 124 * MIB  # flash attention on, ub 512
    assert card.footprint_bytes == 250 * MIB
    # The token embeddings stay in RAM, as llama.cpp keeps them.
    assert report.devices[-1].weights_bytes == pytest.approx(281.81 * MIB, rel=1e-4)
    assert report.summary == "Fits on the GPU: 5.7 GiB of 23.6 GiB free."
    assert report.kv_bytes_per_token == 128 * 1024
    assert report.total_bytes == sum(d.total_bytes for d in report.devices)


def test_partial_offload_on_an_8_gb_card_takes_the_most_layers_that_fit() -> None:
    shape = llama_3_1_8b_q4_k_m()
    report = estimate_fit(shape, rtx_3070(), CTX_32K)
    assert report.verdict == FitVerdict.PARTIAL_OFFLOAD
    n = report.gpu_layers
    assert 0 < n < 33
    card, memory = report.devices
    assert card.layers == n and memory.layers == 32 - n
    assert card.total_bytes + card.margin_bytes <= card.free_bytes
    # The next layer would not fit; the same -ngl given by hand fits the same way.
    one_more = estimate_fit(shape, rtx_3070(), CTX_32K.model_copy(update={"gpu_layers": n + 1}))
    assert one_more.verdict == FitVerdict.DOES_NOT_FIT and not one_more.devices[0].fits
    by_hand = estimate_fit(shape, rtx_3070(), CTX_32K.model_copy(update={"gpu_layers": n}))
    assert by_hand.verdict == FitVerdict.PARTIAL_OFFLOAD and by_hand.devices == report.devices
    # KV follows its layers: 4 GiB in all, split as the blocks are.
    assert card.kv_bytes == n * 128 * MIB and memory.kv_bytes == (32 - n) * 128 * MIB
    assert report.summary.startswith(f"Partly on the GPU: {n} of 33 layers")


def test_no_gpu_runs_on_the_cpu() -> None:
    report = estimate_fit(llama_3_1_8b_q4_k_m(), cpu_only(), CTX_8K)
    assert report.verdict == FitVerdict.CPU_ONLY and report.gpu_layers == 0
    [memory] = report.devices
    assert memory.weights_bytes == llama_3_1_8b_q4_k_m().weight_bytes
    assert memory.footprint_bytes == 150 * MIB
    assert report.summary == "Runs on the CPU only: 5.8 GiB of 24.0 GiB free in RAM."


def test_ngl_zero_on_a_gpu_machine_is_cpu_only() -> None:
    options = CTX_8K.model_copy(update={"gpu_layers": 0})
    report = estimate_fit(llama_3_1_8b_q4_k_m(), rtx_4090(), options)
    assert report.verdict == FitVerdict.CPU_ONLY
    assert report.devices[0].total_bytes == 0


def test_does_not_fit_says_how_much_is_missing() -> None:
    report = estimate_fit(llama_3_1_70b_q4_k_m(), rtx_3070().model_copy(
        update={"memory": cpu_only(ram_free=16 * GIB).memory}), CTX_8K)  # fmt: skip
    assert report.verdict == FitVerdict.DOES_NOT_FIT
    free = 16 * GIB + int(7.4 * GIB)
    assert report.missing_bytes > 0
    # Short by at least what the weights and cache need beyond all free memory.
    assert report.missing_bytes >= report.total_bytes - free
    assert report.summary.startswith("Does not fit: it needs ")


def test_memory_other_programs_hold_does_not_count_as_free() -> None:
    busy = rtx_4090(free=3 * GIB)  # a game holds 21 GiB of the 24
    report = estimate_fit(llama_3_1_8b_q4_k_m(), busy, CTX_8K)
    assert report.verdict == FitVerdict.PARTIAL_OFFLOAD
    assert report.devices[0].free_bytes == 3 * GIB


def test_apple_unified_memory_counts_the_gpu_share_once_under_the_cap() -> None:
    report = estimate_fit(llama_3_1_8b_q4_k_m(), mac_16gb(), CTX_8K)
    assert report.verdict == FitVerdict.FULL_GPU
    metal, memory = report.devices
    assert metal.capacity_bytes == APPLE_CAP and metal.free_bytes == APPLE_CAP - 512 * MIB
    assert metal.footprint_bytes == 0  # no separate VRAM context to pay for
    assert "Metal working-set cap" in metal.note
    # RAM holds the GPU's share too (one pool), and the total counts it once.
    assert memory.weights_bytes == llama_3_1_8b_q4_k_m().weight_bytes
    assert report.total_bytes == memory.total_bytes < metal.total_bytes + memory.total_bytes
    assert "unified memory" in report.summary


def test_apple_cap_limits_the_gpu_before_ram_does() -> None:
    # 48k of context: 6 GiB of KV on top of 4.6 GiB of weights passes 10.7 GB - margin.
    options = FitOptions(context_length=49152)
    report = estimate_fit(llama_3_1_8b_q4_k_m(), mac_16gb(ram_free=14 * GIB), options)
    assert report.verdict == FitVerdict.PARTIAL_OFFLOAD
    metal, memory = report.devices
    assert metal.total_bytes + metal.margin_bytes <= metal.free_bytes
    assert memory.fits


def test_two_gpus_split_layers_by_free_memory_with_the_output_on_the_last() -> None:
    report = estimate_fit(llama_3_1_70b_q4_k_m(), two_3090s(), CTX_8K)
    assert report.verdict == FitVerdict.FULL_GPU and report.gpu_layers == 81
    first, second, memory = report.devices
    # 81 layers at an even split: layer il goes to GPU 0 while il / 81 < 0.5, so blocks
    # 0-40 there, blocks 41-79 and the output layer (q6_K, 821 MiB) on GPU 1.
    assert (first.layers, second.layers) == (41, 39) and memory.layers == 0
    block = llama_3_1_70b_q4_k_m().layer_bytes[0]
    assert first.weights_bytes == 41 * block
    assert second.weights_bytes - 39 * block == pytest.approx(128256 * 8192 * 210 / 256, rel=1e-3)
    assert (first.kv_bytes, second.kv_bytes) == (41 * 32 * MIB, 39 * 32 * MIB)
    assert report.summary.startswith("Fits on 2 GPUs:")


def test_uneven_gpus_get_layers_in_proportion() -> None:
    uneven = machine(
        [nvidia(0, 24 * GIB, 22 * GIB), nvidia(1, 12 * GIB, 11 * GIB)], ram_free=48 * GIB
    )
    report = estimate_fit(llama_3_1_8b_q4_k_m(), uneven, CTX_8K)
    first, second, _ = report.devices
    assert first.layers + second.layers == 32
    assert first.layers == pytest.approx(2 * second.layers, abs=2)


def test_placement_follows_llama_cpp_ngl() -> None:
    # -ngl 33 of a 32-block model: every block and the output layer.
    assert place(32, 33, [1]).runs == ((0, 32),) and place(32, 33, [1]).output_gpu == 0
    # -ngl 32: every block, the output on the CPU; -ngl 20: the last 20 blocks.
    assert place(32, 32, [1]).output_gpu is None
    assert place(32, 20, [1]).runs == ((12, 32),) and place(32, 20, [1]).first_gpu_block == 12
    # More than n_layer + 1 is all of it; no GPU, nothing offloaded.
    assert place(32, 99, [1]).gpu_layers == 33 and place(32, 33, []).gpu_layers == 0
    # Two GPUs, 3:1 free: 81 layers split at 3/4 (llama.cpp's upper_bound over the splits).
    two = place(80, 81, [3, 1])
    assert two.runs == ((0, 61), (61, 80)) and two.output_gpu == 1


def test_gpus_of_other_vendors_and_unknown_memory_are_left_out() -> None:
    intel = GpuInfo(index=1, vendor=GpuVendor.INTEL, name="Intel UHD", source="sysfs")
    blind = GpuInfo(
        index=2, vendor=GpuVendor.NVIDIA, name="RTX", memory_total_bytes=8 * GIB, source="wmi"
    )
    report = estimate_fit(llama_3_1_8b_q4_k_m(), machine([intel, blind]), CTX_8K)
    # The NVIDIA card with only its total known is used at that total, and said so.
    assert [d.index for d in report.devices] == [2, None]
    assert any("Intel UHD" in a for a in report.assumptions)
    assert any("free memory unknown" in a for a in report.assumptions)


def test_a_named_gpu_list_wins_and_empty_means_cpu() -> None:
    options = CTX_8K.model_copy(update={"devices": []})
    assert estimate_fit(llama_3_1_8b_q4_k_m(), rtx_4090(), options).verdict == FitVerdict.CPU_ONLY


def test_sliding_window_makes_gemma_fit_where_full_attention_would_not() -> None:
    shape = gemma_2_9b()
    small = machine([nvidia(0, 8 * GIB, int(7.6 * GIB))])
    windowed = estimate_fit(shape, small, CTX_8K)
    full = estimate_fit(replace(shape, sliding_window=None, swa_layers=()), small, CTX_8K)
    assert windowed.kv_bytes == 2100 * MIB and full.kv_bytes == 42 * 8192 * 8 * 1024
    assert windowed.gpu_layers > full.gpu_layers


def test_vllm_takes_nine_tenths_of_a_free_gpu() -> None:
    shape = shape_from_hf_config(LLAMA_3_1_8B, 16_060_522_496, WeightFormat.SAFETENSORS)
    report = estimate_fit(shape, rtx_4090(), CTX_8K)
    assert report.engine == FitEngine.VLLM and report.verdict == FitVerdict.FULL_GPU
    [card] = report.devices
    # Weights x 1.2 + 2 GiB + 1 GiB of KV inside 0.9 x 24 GiB.
    assert card.total_bytes == pytest.approx(16_060_522_496 * 1.2 + 3 * GIB, rel=1e-6)
    assert "claims 21.6 GiB" in card.note
    # The same card with 4 GiB held elsewhere cannot give vLLM its 90%.
    busy = estimate_fit(shape, rtx_4090(free=20 * GIB), CTX_8K)
    assert busy.verdict == FitVerdict.DOES_NOT_FIT


def test_vllm_spreads_over_the_fewest_gpus_that_hold_it() -> None:
    shape = shape_from_hf_config(LLAMA_3_1_8B, 141_000_000_000, WeightFormat.SAFETENSORS)
    h100s = machine([nvidia(i, 80 * GIB, 79 * GIB, "NVIDIA H100") for i in range(4)])
    report = estimate_fit(shape, h100s, CTX_8K)
    assert report.verdict == FitVerdict.FULL_GPU and len(report.devices) == 4
    assert estimate_fit(shape, two_3090s(), CTX_8K).verdict == FitVerdict.DOES_NOT_FIT


def test_vllm_without_a_gpu_does_not_fit_and_says_why() -> None:
    shape = shape_from_hf_config(LLAMA_3_1_8B, 16_060_522_496, WeightFormat.SAFETENSORS)
    options = CTX_8K.model_copy(update={"engine": FitEngine.VLLM})
    report = estimate_fit(shape, cpu_only(), options)
    assert report.verdict == FitVerdict.DOES_NOT_FIT and report.devices == []
    assert "NVIDIA or AMD GPU" in report.summary


def test_mlx_on_a_mac_and_on_linux() -> None:
    shape = shape_from_hf_config(LLAMA_3_2_3B_MLX_4BIT, 1_807_172_608, WeightFormat.MLX)
    on_mac = estimate_fit(shape, mac_16gb(), CTX_8K)
    assert on_mac.engine == FitEngine.MLX and on_mac.verdict == FitVerdict.FULL_GPU
    assert on_mac.kv_bytes == 28 * 8 * 256 * 2 * 8192  # 28 layers, 8 KV heads of 128
    on_linux = estimate_fit(shape, cpu_only(), CTX_8K)
    assert on_linux.verdict == FitVerdict.CPU_ONLY


def test_engine_and_format_must_match() -> None:
    vllm = FitOptions(engine=FitEngine.VLLM)
    with pytest.raises(InvalidInputError, match="vllm does not run gguf models"):
        estimate_fit(llama_3_1_8b_q4_k_m(), rtx_4090(), vllm)


def test_a_quantized_v_cache_needs_flash_attention() -> None:
    with pytest.raises(ValidationError, match="needs flash attention"):
        FitOptions(cache_type_v=CacheType.Q8_0, flash_attention=False)
    FitOptions(cache_type_k=CacheType.Q8_0, flash_attention=False)  # K alone is fine


def test_context_defaults_to_the_trained_one_up_to_8192() -> None:
    assert estimate_fit(llama_3_1_8b_q4_k_m(), rtx_4090()).context_length == 8192
    short = replace(llama_3_1_8b_q4_k_m(), context_length=4096)
    assert estimate_fit(short, rtx_4090()).context_length == 4096


def test_assumptions_name_what_the_estimate_rests_on() -> None:
    said = " ".join(estimate_fit(gemma_2_9b(), rtx_4090(), CTX_8K).assumptions)
    for words in ("8,192 tokens per request", "K f16, V f16", "flash attention on",
                  "Sliding-window layers", "512.0 MiB", "free memory"):  # fmt: skip
        assert words in said


def test_an_estimate_takes_under_5_ms() -> None:
    # The slowest path: a large model that does not fit, with every piece of advice tried.
    shape, small = llama_3_1_70b_q4_k_m(), rtx_3070()
    timings = []
    for _ in range(5):
        start = time.perf_counter()
        estimate_fit(shape, small, CTX_32K)
        timings.append(time.perf_counter() - start)
    assert min(timings) < 0.005
