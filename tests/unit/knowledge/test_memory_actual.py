"""llama-server's own account of what it allocated, read from recorded load logs.

The CPU logs are this repository's llama-server (the tests' CPU build) loading the tiny
model with `-c 512 -np 1`; the CUDA and Metal lines are quoted from llama.cpp's issues
and CI logs, each named where it is used.
"""

# The recorded lines are kept as the engines wrote them, however long.
# ruff: noqa: E501

from __future__ import annotations

import pytest

from roundhouse.api.fit import DeviceKind
from roundhouse.api.instance_memory import DeviceMemoryUse
from roundhouse.core.knowledge.fit.actual import LoadReport, parse_llama_server_load

MIB = 1024**2


def mib(value: float) -> int:
    return round(value * MIB)


# The tiny model at `-lv 4` (this build logs its buffers at verbosity 4 only).
CPU_TINY = """\
0.00.003.993 I cmn  common_param: common_params_print_info: verbosity = 4 (adjust with the `-lv N` CLI arg)
0.00.004.002 I cmn  common_param:   - CPU     : AMD EPYC (24105 MiB, 24105 MiB free)
0.00.012.959 I common_memory_breakdown_print: | memory breakdown [MiB] | total   free    self   model   context   compute    unaccounted |
0.00.013.028 I common_memory_breakdown_print: |   - Host               |                    2 =     0 +       0 +       1                |
0.00.013.757 I load_tensors: loading model tensors, this can take a while... (load_mode = mmap)
0.00.013.968 I load_tensors:   CPU_Mapped model buffer size =     0.43 MiB
0.00.014.106 I llama_context: constructing llama_context
0.00.014.117 I llama_context: n_seq_max             = 1
0.00.014.117 I llama_context: n_ctx                 = 512
0.00.014.118 I llama_context: n_ctx_seq             = 512
0.00.014.118 I llama_context: n_batch               = 512
0.00.014.118 I llama_context: n_ubatch              = 512
0.00.014.119 I llama_context: flash_attn            = auto
0.00.014.120 I llama_context: kv_unified            = false
0.00.014.127 I llama_context:        CPU  output buffer size =     0.00 MiB
0.00.014.147 I llama_kv_cache:        CPU KV buffer size =     0.12 MiB
0.00.014.218 I llama_kv_cache: size =    0.12 MiB (   512 cells,   2 layers,  1/1 seqs), K (f16):    0.06 MiB, V (f16):    0.06 MiB
0.00.014.234 I sched_reserve: reserving ...
0.00.014.868 I resolve_fused_ops: Flash Attention enabled
0.00.015.185 I sched_reserve:        CPU compute buffer size =     1.51 MiB
0.00.015.186 I sched_reserve: graph: nodes = 68, splits = 1, input objects = 4, input tensors = 6
0.00.097.852 I srv    load_model: initializing, n_slots = 1, n_ctx_slot = 512, kv_unified = 'false'
0.00.097.876 I slot   load_model: id  0 | task -1 | new slot, n_ctx = 512
0.00.100.480 I srv  llama_server: model loaded
"""

# The same build at its default verbosity: not one buffer line.
CPU_TINY_DEFAULT = """\
0.00.002.596 I srv  llama_server: initializing ...
0.00.003.924 I cmn  common_param: common_params_print_info: verbosity = 3 (adjust with the `-lv N` CLI arg)
0.00.007.012 I srv    load_model: loading model '/tmp/tiny.gguf'
0.00.017.967 I srv    load_model: initializing, n_slots = 1, n_ctx_slot = 512, kv_unified = 'false'
0.00.019.741 I srv  llama_server: model loaded
"""

# The CPU build asked for `-ngl 99` (its first lines, at any verbosity), then `-lv 4`.
CPU_TINY_NGL = """\
warning: no usable GPU found, --gpu-layers option will be ignored
warning: one possible reason is that llama.cpp was compiled without GPU support
warning: consult docs/build.md for compilation instructions
0.00.021.935 I load_tensors:   CPU_Mapped model buffer size =     0.43 MiB
0.00.022.093 I llama_context:        CPU  output buffer size =     0.00 MiB
0.00.022.126 I llama_kv_cache:        CPU KV buffer size =     0.12 MiB
0.00.025.008 I sched_reserve:        CPU compute buffer size =     1.51 MiB
"""

# ggml-org/llama.cpp issue #13703 (llama-server, one CUDA GPU, an SWA model: two KV caches).
CUDA_ISWA = """\
load_tensors:        CUDA0 model buffer size = 15773.70 MiB
load_tensors:   CPU_Mapped model buffer size =  1102.50 MiB
llama_context: n_seq_max     = 16
llama_context: n_ctx         = 49152
llama_context: n_ctx_per_seq = 3072
llama_context: n_ubatch      = 128
llama_context: flash_attn    = 1
llama_context:  CUDA_Host  output buffer size =    16.00 MiB
llama_kv_cache_unified_iswa: creating non-SWA KV cache, size = 49152 cells
llama_kv_cache_unified:      CUDA0 KV buffer size =  3840.00 MiB
llama_kv_cache_unified: size = 3840.00 MiB ( 49152 cells,  10 layers), K (f16): 1920.00 MiB, V (f16): 1920.00 MiB
llama_kv_cache_unified_iswa: creating     SWA KV cache, size = 18432 cells
llama_kv_cache_unified:      CUDA0 KV buffer size =  7488.00 MiB
llama_kv_cache_unified: size = 7488.00 MiB ( 18432 cells,  52 layers), K (f16): 3744.00 MiB, V (f16): 3744.00 MiB
"""

# ggml-org/llama.cpp PR #6122 (early 2024: `llm_load_tensors`, two GPUs, a KV total too).
CUDA_2024 = """\
llm_load_tensors: offloading 40 repeating layers to GPU
llm_load_tensors: offloading non-repeating layers to GPU
llm_load_tensors: offloaded 41/41 layers to GPU
llm_load_tensors:        CPU buffer size =  1640.62 MiB
llm_load_tensors:      CUDA0 buffer size =  5434.38 MiB
llm_load_tensors:      CUDA1 buffer size = 13989.53 MiB
llama_kv_cache_init:      CUDA0 KV buffer size =  1536.00 MiB
llama_kv_cache_init:      CUDA1 KV buffer size =  3584.00 MiB
llama_new_context_with_model: KV self size  = 5120.00 MiB, K (f16): 2560.00 MiB, V (f16): 2560.00 MiB
llama_new_context_with_model:  CUDA_Host  output buffer size =     1.95 MiB
llama_new_context_with_model: pipeline parallelism enabled (n_copies=4)
llama_new_context_with_model:      CUDA0 compute buffer size =   672.01 MiB
"""

# ggml-org/llama.cpp issue #14075 (`-sm row`: the blocks' weights in per-GPU split buffers).
CUDA_ROW_SPLIT = """\
load_tensors: offloaded 81/81 layers to GPU
load_tensors:  CUDA0_Split model buffer size = 14056.88 MiB
load_tensors:  CUDA1_Split model buffer size = 13387.50 MiB
load_tensors:        CUDA0 model buffer size =     1.31 MiB
load_tensors:        CUDA1 model buffer size =     1.25 MiB
"""

# ggml-org/llama.cpp issue #27680 (2026 build: time stamps and colours on a terminal).
CUDA_COLOURED = (
    "\x1b[34m1.14.608.918\x1b[0m \x1b[32mI \x1b[0mllama_context:  CUDA_Host  output buffer size"
    " =     0.49 MiB\n"
    "\x1b[34m1.14.610.021\x1b[0m \x1b[32mI \x1b[0mllama_kv_cache:      CUDA0 KV buffer size"
    " =   182.75 MiB\n"
)

# ggml-org's CI for llama.cpp 855cd073 (build 4658), Apple M4, bge-small f16 with -ngl 99.
METAL_2025 = """\
0.00.045.151 I load_tensors: offloading 12 repeating layers to GPU
0.00.045.153 I load_tensors: offloading output layer to GPU
0.00.045.154 I load_tensors: offloaded 13/13 layers to GPU
0.00.045.180 I load_tensors: Metal_Mapped model buffer size =    40.73 MiB
0.00.045.182 I load_tensors:   CPU_Mapped model buffer size =    23.11 MiB
0.00.045.455 I llama_init_from_model: n_seq_max     = 1
0.00.045.456 I llama_init_from_model: n_ctx         = 512
0.00.045.457 I llama_init_from_model: n_ubatch      = 2048
0.00.045.458 I llama_init_from_model: flash_attn    = 0
0.00.063.233 I llama_kv_cache_init:      Metal KV buffer size =     9.00 MiB
0.00.063.236 I llama_init_from_model: KV self size  =    9.00 MiB, K (f16):    4.50 MiB, V (f16):    4.50 MiB
0.00.063.258 I llama_init_from_model:        CPU  output buffer size =     0.00 MiB
0.00.064.433 I llama_init_from_model:      Metal compute buffer size =    16.00 MiB
0.00.064.434 I llama_init_from_model:        CPU compute buffer size =     2.51 MiB
"""

# Newer Metal buffer names (MTL0_*), as a llama.cpp client's tests quote them.
METAL_MTL0 = """\
load_tensors: MTL0_Mapped model buffer size = 8.00 MiB
llama_kv_cache: MTL0_Private KV buffer size = 2.00 MiB
"""

# ggml-org/llama.cpp issue #5137 (build 1971, a CUDA build with no layer offloaded).
CUDA_BUILD_NONE_OFFLOADED = """\
llm_load_tensors: ggml ctx size =    0.38 MiB
llm_load_tensors: offloading 0 repeating layers to GPU
llm_load_tensors: offloaded 0/33 layers to GPU
llm_load_tensors:        CPU buffer size = 11712.97 MiB
llama_kv_cache_init:        CPU KV buffer size =    64.00 MiB
llama_new_context_with_model: KV self size  =   64.00 MiB, K (f16):   32.00 MiB, V (f16):   32.00 MiB
llama_new_context_with_model:        CPU input buffer size   =     9.01 MiB
llama_new_context_with_model:        CPU compute buffer size =   114.53 MiB
"""

# A recurrent (hybrid) model's state: ggml-org/llama.cpp's `llama_memory_recurrent` lines.
RECURRENT = """\
llama_kv_cache:        CPU KV buffer size =    96.00 MiB
llama_kv_cache:      CUDA0 KV buffer size =    32.00 MiB
llama_memory_recurrent:        CPU RS buffer size =   236.91 MiB
llama_memory_recurrent:      CUDA0 RS buffer size =    62.34 MiB
"""


def parse(text: str, requested: int | None = None) -> LoadReport:
    return parse_llama_server_load(text.splitlines(), requested_layers=requested)


def device(text: str, name: str, requested: int | None = None) -> DeviceMemoryUse:
    use = parse(text, requested).use
    assert use is not None
    [found] = [d for d in use.devices if d.device == name]
    return found


def test_cpu_tiny_model_weights_kv_and_compute() -> None:
    report = parse(CPU_TINY)
    use = report.use
    assert use is not None
    assert [d.device for d in use.devices] == ["CPU"]
    cpu = use.devices[0]
    assert cpu.kind == DeviceKind.CPU and cpu.index is None
    assert cpu.weights_bytes == mib(0.43)
    # The KV buffer line, not the summary line after it (same size: counted once).
    assert cpu.kv_bytes == mib(0.12)
    # The compute buffer and the (empty) output buffer.
    assert cpu.compute_bytes == mib(1.51)
    assert cpu.total_bytes == mib(0.43) + mib(0.12) + mib(1.51) == use.total_bytes
    assert use.offloaded_layers is None and not use.cpu_fallback and use.notes == []


def test_cpu_tiny_model_facts_of_the_run() -> None:
    facts = parse(CPU_TINY).facts
    # `n_ctx = 512` of the slot line is not the context's.
    assert (facts.n_ctx, facts.n_seq, facts.n_ubatch) == (512, 1, 512)
    # "auto", then resolved: "Flash Attention enabled".
    assert facts.flash_attention is True
    assert facts.kv_unified is False
    assert facts.verbosity == 4
    assert facts.gpu_ignored is None


def test_default_verbosity_reports_nothing_and_says_its_level() -> None:
    report = parse(CPU_TINY_DEFAULT)
    assert report.use is None
    assert report.facts.verbosity == 3


def test_gpu_layers_asked_of_a_cpu_build_is_a_silent_fallback() -> None:
    use = parse(CPU_TINY_NGL, requested=99).use
    assert use is not None
    assert use.cpu_fallback
    assert [d.device for d in use.devices] == ["CPU"]
    assert "no usable GPU found" in use.notes[0]
    assert "99 layers were asked for on the GPU" in use.notes[0]


def test_no_gpu_layers_asked_is_no_fallback() -> None:
    for requested in (None, 0):
        use = parse(CPU_TINY_NGL, requested=requested).use
        assert use is not None and not use.cpu_fallback and use.notes == []


def test_none_offloaded_by_a_gpu_build_is_a_fallback_when_layers_were_asked() -> None:
    # The run asked for none; here as if `-ngl 33` had been given.
    use = parse(CUDA_BUILD_NONE_OFFLOADED, requested=33).use
    assert use is not None
    assert use.cpu_fallback
    assert (use.offloaded_layers, use.total_layers) == (0, 33)
    cpu = use.devices[0]
    assert cpu.weights_bytes == mib(11712.97)  # `ggml ctx size` is not a buffer
    assert cpu.kv_bytes == mib(64.00)  # the per-device line; `KV self size` not added
    assert cpu.compute_bytes == mib(9.01) + mib(114.53)  # input + compute


def test_fewer_layers_offloaded_than_asked_is_noted() -> None:
    text = CUDA_2024.replace("offloaded 41/41", "offloaded 30/41")
    use = parse(text, requested=41).use
    assert use is not None
    assert not use.cpu_fallback
    assert use.notes and "Only 30 of the 41" in use.notes[0]


def test_cuda_iswa_sums_both_kv_caches_and_pinned_host_is_ram() -> None:
    use = parse(CUDA_ISWA).use
    assert use is not None
    assert [d.device for d in use.devices] == ["CUDA0", "CPU"]
    gpu, cpu = use.devices
    assert (gpu.kind, gpu.index) == (DeviceKind.GPU, 0)
    assert gpu.weights_bytes == mib(15773.70)
    assert gpu.kv_bytes == mib(3840.00) + mib(7488.00)
    assert cpu.weights_bytes == mib(1102.50)
    assert cpu.compute_bytes == mib(16.00)  # CUDA_Host output buffer: pinned RAM
    facts = parse(CUDA_ISWA).facts
    assert (facts.n_ctx, facts.n_seq, facts.n_ubatch, facts.flash_attention) == (
        49152,
        16,
        128,
        True,
    )


def test_2024_format_two_gpus() -> None:
    use = parse(CUDA_2024).use
    assert use is not None
    assert [d.device for d in use.devices] == ["CUDA0", "CUDA1", "CPU"]
    assert device(CUDA_2024, "CUDA0").weights_bytes == mib(5434.38)
    assert device(CUDA_2024, "CUDA1").weights_bytes == mib(13989.53)
    assert device(CUDA_2024, "CUDA1").index == 1
    assert device(CUDA_2024, "CPU").weights_bytes == mib(1640.62)
    # Per device, never the `KV self size` total on top.
    assert use.kv_bytes == mib(1536.00) + mib(3584.00)
    assert device(CUDA_2024, "CUDA0").compute_bytes == mib(672.01)
    assert device(CUDA_2024, "CPU").compute_bytes == mib(1.95)
    assert (use.offloaded_layers, use.total_layers) == (41, 41)


def test_row_split_buffers_belong_to_their_gpu() -> None:
    use = parse(CUDA_ROW_SPLIT).use
    assert use is not None
    assert [d.device for d in use.devices] == ["CUDA0", "CUDA1"]
    assert device(CUDA_ROW_SPLIT, "CUDA0").weights_bytes == mib(14056.88) + mib(1.31)


def test_terminal_colours_are_ignored() -> None:
    use = parse(CUDA_COLOURED).use
    assert use is not None
    assert device(CUDA_COLOURED, "CUDA0").kv_bytes == mib(182.75)
    assert device(CUDA_COLOURED, "CPU").compute_bytes == mib(0.49)


def test_metal_mapped_weights_are_the_gpus() -> None:
    use = parse(METAL_2025).use
    assert use is not None
    assert [d.device for d in use.devices] == ["Metal", "CPU"]
    metal = device(METAL_2025, "Metal")
    assert (metal.kind, metal.index) == (DeviceKind.GPU, 0)
    assert (metal.weights_bytes, metal.kv_bytes, metal.compute_bytes) == (
        mib(40.73),
        mib(9.00),
        mib(16.00),
    )
    cpu = device(METAL_2025, "CPU")
    assert (cpu.weights_bytes, cpu.compute_bytes) == (mib(23.11), mib(2.51))
    assert parse(METAL_2025).facts.flash_attention is False


def test_newer_metal_names() -> None:
    mtl = device(METAL_MTL0, "MTL0")
    assert (mtl.kind, mtl.weights_bytes, mtl.kv_bytes) == (DeviceKind.GPU, mib(8), mib(2))


def test_recurrent_state_counts_with_the_kv_cache() -> None:
    assert device(RECURRENT, "CUDA0").kv_bytes == mib(32.00) + mib(62.34)
    assert device(RECURRENT, "CPU").kv_bytes == mib(96.00) + mib(236.91)


def test_only_a_kv_total_is_kept_as_a_total() -> None:
    use = parse("llama_new_context_with_model: kv self size  = 1024.00 MB\n").use
    assert use is not None
    assert use.devices == [] and use.kv_bytes == mib(1024)
    assert "only as a total" in use.notes[0]


@pytest.mark.parametrize(
    "line",
    [
        "srv  log_server_r: request: GET /health 127.0.0.1 503",
        "load_tensors: tensor 'token_embd.weight' (q6_K) cannot be used with preferred buffer "
        "type CUDA_Host, using CPU instead",
        "llama_kv_cache: size =    0.12 MiB (   512 cells,   2 layers,  1/1 seqs)",
        "common_memory_breakdown_print: |   - Host   |   2 =     0 +       0 +       1  |",
        "print_info: file size   = 0.43 MiB (32.00 BPW)",
        "",
    ],
)
def test_other_lines_are_not_buffers(line: str) -> None:
    assert parse(line).use is None
