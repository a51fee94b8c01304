"""What an HF config.json says that a list of models shows: architecture, context, quantization."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
_DTYPES = {
    "bfloat16": "BF16",
    "float16": "F16",
    "half": "F16",
    "float32": "F32",
    "float": "F32",
    "float8_e4m3fn": "FP8",
}


@dataclass(frozen=True)
class ConfigFacts:
    architecture: str | None = None  # model_type: "qwen3", "llama"
    context_length: int | None = None
    quantization: str | None = None  # "4bit" (MLX), "AWQ 4-bit", "FP8", "BF16"
    mlx: bool = False  # quantized the way mlx-lm writes it


def config_facts(config: Mapping[str, object] | None) -> ConfigFacts:
    if not config:
        return ConfigFacts()
    text = config.get("text_config")
    inner = text if isinstance(text, Mapping) else {}
    arch = _text(config.get("model_type")) or _text(inner.get("model_type"))
    context = next(
        (v for k in _CONTEXT_KEYS for v in (_int(config.get(k)), _int(inner.get(k))) if v), None
    )
    quant, mlx = _quantization(config, inner)
    return ConfigFacts(arch, context, quant, mlx)


def _quantization(
    config: Mapping[str, object], inner: Mapping[str, object]
) -> tuple[str | None, bool]:
    # mlx-lm writes {"quantization": {"group_size": 64, "bits": 4}} (and the same again as
    # quantization_config); transformers' methods name themselves in quant_method.
    mlx_quant = config.get("quantization")
    if isinstance(mlx_quant, Mapping) and _int(mlx_quant.get("bits")):
        return f"{_int(mlx_quant.get('bits'))}bit", True
    hf_quant = config.get("quantization_config")
    if isinstance(hf_quant, Mapping):
        method = _text(hf_quant.get("quant_method"))
        bits = _int(hf_quant.get("bits"))
        if method:
            name = method.upper().replace("_", "-")
            return (f"{name} {bits}-bit" if bits else name), False
        if bits:
            return f"{bits}bit", True
    dtype = _text(config.get("torch_dtype")) or _text(config.get("dtype"))
    dtype = dtype or _text(inner.get("torch_dtype")) or _text(inner.get("dtype"))
    if dtype:
        return _DTYPES.get(dtype.lower(), dtype.upper()), False
    return None, False


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
