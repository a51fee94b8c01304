"""Advice is checked the only way that counts: estimate again with it, and it fits."""

from __future__ import annotations

from dataclasses import replace

from roundhouse.api.fit import (
    AdviceKind,
    CacheType,
    FitAdvice,
    FitEngine,
    FitOptions,
    FitReport,
    FitVerdict,
)
from roundhouse.core.knowledge.fit import estimate_fit
from roundhouse.core.knowledge.fit.quants import BPW, smaller_shape
from roundhouse.core.knowledge.hf_config import shape_from_hf_config
from roundhouse.core.knowledge.shape import ModelShape, WeightFormat
from tests.unit.knowledge.test_fit_cases import (
    GIB,
    cpu_only,
    llama_3_1_8b_q4_k_m,
    llama_3_1_70b_q4_k_m,
    mac_16gb,
    machine,
    nvidia,
    rtx_3070,
    rtx_4090,
)
from tests.unit.knowledge.test_fit_hf_config import LLAMA_3_1_8B, LLAMA_3_2_3B_MLX_4BIT

CTX_32K = FitOptions(context_length=32768)


def advice(report: FitReport, kind: AdviceKind) -> FitAdvice:
    found = [a for a in report.advice if a.kind == kind]
    assert found, f"no {kind} advice in {[a.kind for a in report.advice]}"
    return found[0]


def test_partial_offload_advice_each_makes_it_fit_on_the_gpu() -> None:
    shape, card = llama_3_1_8b_q4_k_m(), rtx_3070()
    report = estimate_fit(shape, card, CTX_32K)
    assert report.verdict == FitVerdict.PARTIAL_OFFLOAD

    layers = advice(report, AdviceKind.OFFLOAD_LAYERS)
    assert layers.value == report.gpu_layers and f"-ngl {report.gpu_layers}" in layers.text
    again = estimate_fit(shape, card, CTX_32K.model_copy(update={"gpu_layers": layers.value}))
    assert again.verdict == FitVerdict.PARTIAL_OFFLOAD

    context = advice(report, AdviceKind.MAX_CONTEXT)
    assert isinstance(context.value, int) and context.value % 1024 == 0
    at_most = FitOptions(context_length=context.value)
    assert estimate_fit(shape, card, at_most).verdict == FitVerdict.FULL_GPU
    past = FitOptions(context_length=context.value + 1024)
    assert estimate_fit(shape, card, past).verdict != FitVerdict.FULL_GPU

    kv = advice(report, AdviceKind.KV_Q8_0)
    assert kv.value == "q8_0" and "-ctk q8_0 -ctv q8_0" in kv.text
    q8 = CTX_32K.model_copy(update={"cache_type_k": kv.value, "cache_type_v": kv.value})
    assert estimate_fit(shape, card, q8).verdict == FitVerdict.FULL_GPU
    # q4_0 costs quality: not offered when q8_0 already does it.
    assert AdviceKind.KV_Q4_0 not in {a.kind for a in report.advice}


def test_fewer_parallel_requests() -> None:
    shape, card = llama_3_1_8b_q4_k_m(), rtx_3070()
    options = FitOptions(context_length=8192, n_parallel=4)
    report = estimate_fit(shape, card, options)
    assert report.verdict == FitVerdict.PARTIAL_OFFLOAD
    fewer = advice(report, AdviceKind.FEWER_PARALLEL)
    one = options.model_copy(update={"n_parallel": fewer.value})
    assert estimate_fit(shape, card, one).verdict == FitVerdict.FULL_GPU


def test_too_many_gpu_layers_by_hand_get_the_number_that_fits() -> None:
    shape, card = llama_3_1_8b_q4_k_m(), rtx_3070()
    options = CTX_32K.model_copy(update={"gpu_layers": 33})
    report = estimate_fit(shape, card, options)
    assert report.verdict == FitVerdict.DOES_NOT_FIT
    layers = advice(report, AdviceKind.OFFLOAD_LAYERS)
    fixed = options.model_copy(update={"gpu_layers": layers.value})
    assert estimate_fit(shape, card, fixed).verdict == FitVerdict.PARTIAL_OFFLOAD


def test_full_gpu_says_how_much_context_would_still_fit() -> None:
    shape = llama_3_1_8b_q4_k_m()
    report = estimate_fit(shape, rtx_4090(), FitOptions(context_length=8192))
    most = advice(report, AdviceKind.MAX_CONTEXT)
    assert isinstance(most.value, int) and most.value > 8192
    assert estimate_fit(shape, rtx_4090(), FitOptions(context_length=most.value)).verdict == (
        FitVerdict.FULL_GPU
    )
    # With flash attention a 24 GB card holds all 128k (16 GiB of KV): the advice stops at
    # the trained context. A 16 GB card stops short of it.
    assert most.value == 131072
    smaller = machine([nvidia(0, 16 * GIB, 15 * GIB, "NVIDIA RTX 4080")])
    on_16 = advice(estimate_fit(shape, smaller, FitOptions()), AdviceKind.MAX_CONTEXT)
    assert isinstance(on_16.value, int) and 8192 < on_16.value < 131072
    assert {a.kind for a in report.advice} == {AdviceKind.MAX_CONTEXT}


def test_does_not_fit_advice_shorter_context_or_more_memory() -> None:
    shape = llama_3_1_8b_q4_k_m()
    small = cpu_only(ram_free=8 * GIB)
    report = estimate_fit(shape, small, CTX_32K)
    assert report.verdict == FitVerdict.DOES_NOT_FIT
    context = advice(report, AdviceKind.MAX_CONTEXT)
    assert isinstance(context.value, int)
    assert estimate_fit(shape, small, FitOptions(context_length=context.value)).verdict == (
        FitVerdict.CPU_ONLY
    )
    missing = advice(report, AdviceKind.FREE_MEMORY)
    assert missing.value == report.missing_bytes > 0
    roomier = cpu_only(ram_free=8 * GIB + report.missing_bytes)
    assert estimate_fit(shape, roomier, CTX_32K).verdict == FitVerdict.CPU_ONLY
    # One byte less is still short: the figure is exact, not padded.
    tighter = cpu_only(ram_free=8 * GIB + report.missing_bytes - 1)
    assert estimate_fit(shape, tighter, CTX_32K).verdict == FitVerdict.DOES_NOT_FIT


def test_a_model_too_big_for_the_machine_gets_a_smaller_quantization() -> None:
    shape = llama_3_1_70b_q4_k_m()
    box = machine([nvidia(0, 24 * GIB, 23 * GIB)], ram_total=32 * GIB, ram_free=16 * GIB)
    report = estimate_fit(shape, box, FitOptions(context_length=4096))
    assert report.verdict == FitVerdict.DOES_NOT_FIT
    quant = advice(report, AdviceKind.SMALLER_QUANT)
    assert isinstance(quant.value, str)
    bpw = shape.weight_bytes * 8 / shape.parameter_count
    smaller = smaller_shape(shape, BPW[quant.value] / bpw)
    assert estimate_fit(smaller, box, FitOptions(context_length=4096)).verdict != (
        FitVerdict.DOES_NOT_FIT
    )


def test_vllm_on_a_busy_gpu_is_told_to_claim_less() -> None:
    shape = shape_from_hf_config(LLAMA_3_1_8B, 16_060_522_496, WeightFormat.SAFETENSORS)
    busy = machine([nvidia(0, 48 * GIB, 40 * GIB, "NVIDIA L40S")])
    report = estimate_fit(shape, busy, FitOptions(context_length=8192))
    assert report.verdict == FitVerdict.DOES_NOT_FIT  # 0.9 x 48 GiB is not free
    share = advice(report, AdviceKind.GPU_MEMORY_UTILIZATION)
    assert isinstance(share.value, str)
    options = FitOptions(context_length=8192, gpu_memory_utilization=float(share.value))
    assert estimate_fit(shape, busy, options).verdict == FitVerdict.FULL_GPU


def test_vllm_with_no_gpu_is_pointed_at_another_engine() -> None:
    shape = shape_from_hf_config(LLAMA_3_1_8B, 16_060_522_496, WeightFormat.SAFETENSORS)
    report = estimate_fit(shape, cpu_only(), FitOptions(engine=FitEngine.VLLM))
    assert advice(report, AdviceKind.OTHER_ENGINE).value == "llama.cpp"


def test_mlx_past_the_metal_cap_is_told_to_raise_it() -> None:
    # 8-bit weights of a 3B model at 128k of context: 14 GiB of KV passes the 10.7 GB cap.
    config = {**LLAMA_3_2_3B_MLX_4BIT, "quantization": {"group_size": 64, "bits": 8}}
    shape: ModelShape = shape_from_hf_config(config, 3_420_000_000, WeightFormat.MLX)
    options = FitOptions(context_length=65536)
    mac = mac_16gb(ram_free=15 * GIB)
    report = estimate_fit(shape, mac, options)
    assert report.verdict == FitVerdict.DOES_NOT_FIT
    limit = advice(report, AdviceKind.RAISE_GPU_LIMIT)
    assert isinstance(limit.value, int) and "iogpu.wired_limit_mb" in limit.text
    cap = limit.value * 1024**2
    metal = mac.gpus[0].model_copy(
        update={"memory_total_bytes": cap, "memory_free_bytes": cap - 512 * 1024**2}
    )
    raised = mac.model_copy(update={"gpus": [metal]})
    assert estimate_fit(shape, raised, options).verdict == FitVerdict.FULL_GPU


def test_quantized_cache_advice_is_not_repeated_once_quantized() -> None:
    options = CTX_32K.model_copy(
        update={"cache_type_k": CacheType.Q8_0, "cache_type_v": CacheType.Q8_0}
    )
    report = estimate_fit(replace(llama_3_1_8b_q4_k_m()), rtx_3070(), options)
    kinds = {a.kind for a in report.advice}
    assert AdviceKind.KV_Q8_0 not in kinds and AdviceKind.KV_Q4_0 not in kinds
