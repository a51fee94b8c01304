"""Which engines can serve a model of a given format and architecture (pure)."""

from __future__ import annotations

import platform
import sys

from roundhouse.api.engines import EngineId, ModelFormat

# config.json model_type values mlx-lm 0.32 loads (its mlx_lm/models modules and remaps).
MLX_MODEL_TYPES = frozenset(
    """
    Klear afm7 afmoe apertus baichuan_m1 bailing_hybrid bailing_moe bailing_moe_linear
    bailing_moe_v3 bitnet cohere cohere2 dbrx deepseek deepseek_v2 deepseek_v3 deepseek_v32
    deepseek_v41 dots1 ernie4_5 ernie4_5_moe exaone exaone4 exaone_moe falcon_h1 gemma gemma2
    gemma3 gemma3_text gemma3n gemma4 gemma4_text glm glm4 glm4_moe glm4_moe_lite glm_moe_dsa
    gpt2 gpt_bigcode gpt_neox gpt_oss gptj granite granitemoe granitemoehybrid helium hunyuan
    hunyuan_v1_dense internlm2 internlm3 jamba kimi_k25 kimi_linear kimi_vl lfm2 lfm2-vl
    lfm2_moe llama llama4 llama4_text longcat_flash mamba mamba2 mimo minicpm minicpm3 minimax
    ministral3 mistral3 mixtral nemotron nemotron-nas nemotron_h olmo olmo2 olmo3 olmoe
    openelm phi phi3 phi3small phimoe phixtral pixtral plamo plamo2 qwen qwen2 qwen2_moe
    qwen2_vl qwen3 qwen3_moe qwen3_next qwen3_vl qwen3_vl_moe recurrent_gemma rwkv7 seed_oss
    smollm3 stablelm starcoder2
    mistral llava phi-msft falcon_mamba kimi_k2 qwen2_5_vl minimax_m2 xverse
    """.split()  # noqa: SIM905 - a list of 110 names reads better as words
)


def is_apple_silicon() -> bool:
    return sys.platform == "darwin" and platform.machine() == "arm64"


def engines_for(
    fmt: ModelFormat, architecture: str | None = None, apple_silicon: bool = False
) -> list[EngineId]:
    """GGUF: llama.cpp, and Ollama by importing it; safetensors: vLLM and SGLang, and mlx-lm
    on Apple silicon when it knows the architecture; MLX: mlx-lm; Ollama's own: Ollama."""
    if fmt is ModelFormat.GGUF:
        return [EngineId.LLAMA_CPP, EngineId.OLLAMA]
    if fmt is ModelFormat.MLX:
        return [EngineId.MLX]
    if fmt is ModelFormat.OLLAMA:
        return [EngineId.OLLAMA]
    engines = [EngineId.VLLM, EngineId.SGLANG]
    if apple_silicon and architecture in MLX_MODEL_TYPES:
        engines.append(EngineId.MLX)
    return engines
