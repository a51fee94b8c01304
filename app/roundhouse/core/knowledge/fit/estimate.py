"""estimate_fit: the verdict, breakdown and advice for one model on this machine.

Pure and fast (well under 5 ms): arithmetic over the shape and the inventory. The
context defaults to the model's trained context, at most 8192 tokens (DEFAULT_CONTEXT):
most chats need less, every engine accepts it, and a 128k default would make most
models "not fit" for a context nobody asked for.
"""

from __future__ import annotations

from roundhouse.api.fit import FitEngine, FitOptions, FitReport
from roundhouse.api.hardware import GpuVendor, HardwareInventory
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.knowledge.fit.advice import advise
from roundhouse.core.knowledge.fit.cache import kv_bytes_per_token
from roundhouse.core.knowledge.fit.devices import build_budget
from roundhouse.core.knowledge.fit.dispatch import evaluate
from roundhouse.core.knowledge.fit.text import assumptions, summary
from roundhouse.core.knowledge.shape import ModelShape, WeightFormat

DEFAULT_CONTEXT = 8192
_FORMATS = {
    FitEngine.LLAMA_CPP: (WeightFormat.GGUF,),
    FitEngine.OLLAMA: (WeightFormat.GGUF,),
    FitEngine.MLX: (WeightFormat.MLX, WeightFormat.SAFETENSORS),
    FitEngine.VLLM: (WeightFormat.SAFETENSORS,),
    FitEngine.SGLANG: (WeightFormat.SAFETENSORS,),
}


def choose_engine(shape: ModelShape, hardware: HardwareInventory, options: FitOptions) -> FitEngine:
    if options.engine is not None:
        if shape.format not in _FORMATS[options.engine]:
            raise InvalidInputError(
                f"{options.engine.value} does not run {shape.format.value} models: choose "
                + ("llama.cpp or Ollama" if shape.format == WeightFormat.GGUF else "another engine")
            )
        return options.engine
    if shape.format == WeightFormat.GGUF:
        return FitEngine.LLAMA_CPP
    apple = any(g.vendor == GpuVendor.APPLE for g in hardware.gpus)
    if shape.format == WeightFormat.MLX or apple:
        return FitEngine.MLX
    return FitEngine.VLLM


def context_for(shape: ModelShape, options: FitOptions) -> int:
    if options.context_length is not None:
        return options.context_length
    return min(shape.context_length, DEFAULT_CONTEXT) if shape.context_length else DEFAULT_CONTEXT


def _check(shape: ModelShape) -> None:
    if shape.n_layer <= 0 or len(shape.layer_bytes) != shape.n_layer:
        raise InvalidInputError(
            f"the model's shape is incomplete ({shape.n_layer} layers, "
            f"{len(shape.layer_bytes)} layer sizes): read its header or config again"
        )
    if shape.weight_bytes <= 0:
        raise InvalidInputError("the model's weights have no size: check its files")


def estimate_fit(
    shape: ModelShape, hardware: HardwareInventory, options: FitOptions | None = None
) -> FitReport:
    """Will `shape` fit on `hardware` run as `options` say? Verdict, breakdown, advice."""
    options = options or FitOptions()
    _check(shape)
    engine = choose_engine(shape, hardware, options)
    ctx = context_for(shape, options)
    budget = build_budget(hardware, options)
    outcome = evaluate(shape, budget, options, engine, ctx)
    return FitReport(
        verdict=outcome.verdict,
        engine=engine,
        summary=summary(outcome, budget),
        context_length=ctx,
        n_parallel=options.n_parallel,
        gpu_layers=outcome.gpu_layers,
        total_layers=outcome.total_layers,
        devices=[load.device_fit() for load in outcome.loads],
        weights_bytes=outcome.weights,
        kv_bytes=outcome.kv,
        kv_bytes_per_token=kv_bytes_per_token(shape, options.cache_type_k, options.cache_type_v),
        compute_bytes=outcome.compute,
        total_bytes=outcome.total,
        missing_bytes=outcome.missing,
        advice=advise(shape, budget, options, engine, ctx, outcome),
        assumptions=[*assumptions(shape, options, engine, ctx, budget), *outcome.notes],
    )
