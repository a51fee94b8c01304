"""Models and machines the fit tests share: published shapes and synthetic inventories.

Shapes are built by hand from the models' published config.json / GGUF metadata; the
Llama-3.1-8B Q4_K_M sizes are llama.cpp's own figures for bartowski's file (token_embd
in q4_K: 281.81 MiB; output in q6_K: 410.98 MiB; blocks 4403.49 - 410.98 MiB in all).
"""

from __future__ import annotations

from roundhouse.api.hardware import (
    CpuInfo,
    GpuInfo,
    GpuVendor,
    HardwareInventory,
    MemoryInfo,
)
from roundhouse.core.knowledge.shape import ModelShape, WeightFormat

KIB, MIB, GIB = 1024, 1024**2, 1024**3

# --- models -------------------------------------------------------------------------

LLAMA_8B_EMBD = 128256 * 4096 * 144 // 256  # q4_K: 144 bytes per 256 weights
LLAMA_8B_OUTPUT = 128256 * 4096 * 210 // 256  # q6_K: 210 bytes per 256 weights
LLAMA_8B_BLOCKS = int((4403.49 - 410.98) * MIB)  # CUDA0 model buffer less the output


def llama_3_1_8b_q4_k_m() -> ModelShape:
    """Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf: 32 layers, 8 KV heads of 128, 4.58 GiB."""
    return ModelShape(
        format=WeightFormat.GGUF,
        architecture="llama",
        n_layer=32,
        n_embd=4096,
        n_head=32,
        n_head_kv=8,
        key_length=128,
        value_length=128,
        context_length=131072,
        layer_bytes=(LLAMA_8B_BLOCKS // 32,) * 32,
        other_bytes=LLAMA_8B_EMBD + LLAMA_8B_OUTPUT + 4096 * 4,
        vocab_size=128256,
        parameter_count=8_030_261_248,
        quantization="Q4_K_M",
        feed_forward_length=14336,
        embedding_bytes=LLAMA_8B_EMBD,
        output_bytes=LLAMA_8B_OUTPUT,
    )


def llama_3_1_70b_q4_k_m() -> ModelShape:
    """Llama-3.1-70B-Instruct Q4_K_M (42.5 GB): 80 layers, 8192 wide, 8 KV heads."""
    embd, out = 128256 * 8192 * 144 // 256, 128256 * 8192 * 210 // 256
    blocks = 42_520_000_000 - embd - out
    return ModelShape(
        format=WeightFormat.GGUF,
        architecture="llama",
        n_layer=80,
        n_embd=8192,
        n_head=64,
        n_head_kv=8,
        key_length=128,
        value_length=128,
        context_length=131072,
        layer_bytes=(blocks // 80,) * 80,
        other_bytes=embd + out,
        vocab_size=128256,
        parameter_count=70_553_706_496,
        quantization="Q4_K_M",
        feed_forward_length=28672,
        embedding_bytes=embd,
        output_bytes=out,
    )


def gemma_2_9b(fmt: WeightFormat = WeightFormat.GGUF, weights: int = 5_760_000_000) -> ModelShape:
    """gemma-2-9b-it: 42 layers, 8 KV heads of 256, window 4096 on even layers, tied."""
    embd = 256000 * 3584 * 210 // 256
    return ModelShape(
        format=fmt,
        architecture="gemma2",
        n_layer=42,
        n_embd=3584,
        n_head=16,
        n_head_kv=8,
        key_length=256,
        value_length=256,
        context_length=8192,
        layer_bytes=((weights - embd) // 42,) * 42,
        other_bytes=embd,
        vocab_size=256000,
        sliding_window=4096,
        swa_layers=tuple(i % 2 == 0 for i in range(42)),
        feed_forward_length=14336,
        embedding_bytes=embd,
        output_bytes=embd,
    )


def deepseek_v2_lite(weights: int = 31_400_000_000) -> ModelShape:
    """DeepSeek-V2-Lite: 27 layers, MLA with kv_lora_rank 512 and a 64-wide rope part."""
    embd = 102400 * 2048 * 2
    return ModelShape(
        format=WeightFormat.SAFETENSORS,
        architecture="deepseek_v2",
        n_layer=27,
        n_embd=2048,
        n_head=16,
        n_head_kv=1,
        key_length=192,
        value_length=128,
        context_length=163840,
        layer_bytes=((weights - 2 * embd) // 27,) * 27,
        other_bytes=2 * embd,
        vocab_size=102400,
        kv_lora_rank=512,
        rope_dim=64,
        n_expert=64,
        n_expert_used=6,
        feed_forward_length=6 * 1408 + 2 * 1408,
        embedding_bytes=embd,
        output_bytes=embd,
    )


# --- machines -----------------------------------------------------------------------


def machine(
    gpus: list[GpuInfo], ram_total: int = 32 * GIB, ram_free: int = 24 * GIB
) -> HardwareInventory:
    return HardwareInventory(
        os="Linux",
        os_version="6.8",
        cpu=CpuInfo(
            brand="test CPU", arch="x86_64", physical_cores=8, logical_cores=16, features=[]
        ),
        memory=MemoryInfo(total_bytes=ram_total, available_bytes=ram_free),
        disk=None,
        gpus=gpus,
        unseen=[],
        recommendations=[],
    )


def nvidia(index: int, total: int, free: int, name: str = "NVIDIA GeForce RTX 4090") -> GpuInfo:
    return GpuInfo(
        index=index,
        vendor=GpuVendor.NVIDIA,
        name=name,
        memory_total_bytes=total,
        memory_used_bytes=total - free,
        memory_free_bytes=free,
        source="nvml",
    )


def rtx_4090(free: int = int(23.6 * GIB)) -> HardwareInventory:
    return machine([nvidia(0, 24 * GIB, free)])


def rtx_3070() -> HardwareInventory:
    return machine([nvidia(0, 8 * GIB, int(7.4 * GIB), "NVIDIA GeForce RTX 3070")])


def cpu_only(ram_free: int = 24 * GIB) -> HardwareInventory:
    return machine([], ram_free=ram_free)


APPLE_CAP = 11_453_251_584  # 10.7 GB: recommendedMaxWorkingSetSize of a 16 GB M1


def mac_16gb(in_use: int = 512 * MIB, ram_free: int = 11 * GIB) -> HardwareInventory:
    gpu = GpuInfo(
        index=0,
        vendor=GpuVendor.APPLE,
        name="Apple M1",
        memory_total_bytes=APPLE_CAP,
        memory_used_bytes=in_use,
        memory_free_bytes=APPLE_CAP - in_use,
        unified=True,
        source="ioreg",
    )
    inventory = machine([gpu], ram_total=16 * GIB, ram_free=ram_free)
    return inventory.model_copy(update={"os": "Darwin"})


def two_3090s() -> HardwareInventory:
    return machine(
        [
            nvidia(0, 24 * GIB, 23 * GIB, "NVIDIA GeForce RTX 3090"),
            nvidia(1, 24 * GIB, 23 * GIB, "NVIDIA GeForce RTX 3090"),
        ],
        ram_total=64 * GIB,
        ram_free=48 * GIB,
    )


# --- the cases are what they claim ----------------------------------------------------


def test_llama_8b_weighs_what_llama_cpp_loads() -> None:
    shape = llama_3_1_8b_q4_k_m()
    # "CPU model buffer size = 281.81 MiB", "CUDA0 model buffer size = 4403.49 MiB"
    assert round(LLAMA_8B_EMBD / MIB, 2) == 281.81
    assert round(LLAMA_8B_OUTPUT / MIB, 2) == 410.98
    assert abs(shape.weight_bytes / GIB - 4.58) < 0.01  # "model size = 4.58 GiB"


def test_gemma_shape_alternates_windowed_layers() -> None:
    shape = gemma_2_9b()
    assert sum(shape.swa_layers) == 21 and shape.swa_layers[0] and not shape.swa_layers[1]
    assert abs(shape.weight_bytes - 5_760_000_000) < 42
