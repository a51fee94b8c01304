"""One engine's estimate at one context: the call advice repeats with its changes."""

from __future__ import annotations

from roundhouse.api.fit import FitEngine, FitOptions
from roundhouse.core.models.fit import llamacpp, mlx, servers
from roundhouse.core.models.fit.devices import Budget
from roundhouse.core.models.fit.outcome import Outcome
from roundhouse.core.models.shape import ModelShape


def evaluate(
    shape: ModelShape, budget: Budget, options: FitOptions, engine: FitEngine, ctx: int
) -> Outcome:
    if engine in (FitEngine.LLAMA_CPP, FitEngine.OLLAMA):
        return llamacpp.evaluate(shape, budget, options, ctx)
    if engine == FitEngine.MLX:
        return mlx.evaluate(shape, budget, options, ctx)
    return servers.evaluate(shape, budget, options, ctx, engine)
