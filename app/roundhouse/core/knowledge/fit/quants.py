"""Bits per weight of common quantizations, to advise a smaller one that fits.

GGUF figures are llama.cpp's averages for a 7-8B model (the "BPW" its loader prints;
bigger models come out slightly lower); MLX's are its group-wise format (bits + a
16-bit scale and bias per group of 64). They are rough by nature: a file's size is the
truth once it is known, and the advice says "about".
"""

from __future__ import annotations

from dataclasses import replace

from roundhouse.core.knowledge.shape import ModelShape, WeightFormat

BPW: dict[str, float] = {
    "F32": 32.0,
    "F16": 16.0,
    "BF16": 16.0,
    "FP8": 8.0,
    "Q8_0": 8.5,
    "Q6_K": 6.56,
    "Q5_K_M": 5.70,
    "Q5_K_S": 5.54,
    "Q5_0": 5.5,
    "Q4_K_M": 4.89,
    "Q4_K_S": 4.58,
    "Q4_0": 4.55,
    "IQ4_NL": 4.5,
    "IQ4_XS": 4.46,
    "Q3_K_L": 4.27,
    "Q3_K_M": 3.91,
    "IQ3_M": 3.66,
    "Q3_K_S": 3.5,
    "IQ3_XXS": 3.21,
    "Q2_K": 3.35,
    "IQ2_M": 2.93,
    "8BIT": 8.5,
    "6BIT": 6.5,
    "4BIT": 4.5,
    "3BIT": 3.5,
}

_LADDERS: dict[WeightFormat, tuple[tuple[str, float], ...]] = {
    WeightFormat.GGUF: (
        ("Q8_0", 8.5), ("Q6_K", 6.56), ("Q5_K_M", 5.70), ("Q4_K_M", 4.89),
        ("IQ4_XS", 4.46), ("Q3_K_M", 3.91), ("IQ3_M", 3.66), ("Q2_K", 3.35),
        ("IQ2_M", 2.93),
    ),
    WeightFormat.MLX: (("8bit", 8.5), ("6bit", 6.5), ("4bit", 4.5), ("3bit", 3.5)),
    WeightFormat.SAFETENSORS: (("FP8", 8.0), ("AWQ 4-bit", 4.25)),
}  # fmt: skip


def ladder(fmt: WeightFormat) -> tuple[tuple[str, float], ...]:
    """Quantizations of this format, largest first, with their bits per weight."""
    return _LADDERS[fmt]


def weight_bpw(shape: ModelShape) -> float | None:
    """The model's bits per weight: from its size and parameters, else its quant's name."""
    if shape.parameter_count > 0:
        return shape.weight_bytes * 8 / shape.parameter_count
    if shape.quantization:
        return BPW.get(shape.quantization.upper())
    return None


def smaller_shape(shape: ModelShape, factor: float) -> ModelShape:
    """The same model with every weight `factor` times its size."""
    return replace(
        shape,
        layer_bytes=tuple(int(b * factor) for b in shape.layer_bytes),
        other_bytes=int(shape.other_bytes * factor),
        embedding_bytes=int(shape.embedding_bytes * factor),
        output_bytes=int(shape.output_bytes * factor),
        expert_bytes=tuple(int(b * factor) for b in shape.expert_bytes),
    )
