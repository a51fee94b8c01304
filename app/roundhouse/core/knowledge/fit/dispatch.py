"""One engine's estimate at one context: the call advice repeats with its changes."""

from __future__ import annotations

from roundhouse.api.fit import FitEngine, FitOptions
from roundhouse.core.knowledge.fit.devices import Budget
from roundhouse.core.knowledge.fit.llamacpp import evaluate as llamacpp_evaluate
from roundhouse.core.knowledge.fit.mlx import evaluate as mlx_evaluate
from roundhouse.core.knowledge.fit.outcome import Outcome
from roundhouse.core.knowledge.fit.servers import evaluate as servers_evaluate
from roundhouse.core.knowledge.shape import ModelShape


# Each engine's evaluate by its module's full name: `from ...fit import llamacpp` would
# reach through this package's __init__, which is still loading while it imports this module.
def evaluate(
    shape: ModelShape, budget: Budget, options: FitOptions, engine: FitEngine, ctx: int
) -> Outcome:
    if engine in (FitEngine.LLAMA_CPP, FitEngine.OLLAMA):
        return llamacpp_evaluate(shape, budget, options, ctx)
    if engine == FitEngine.MLX:
        return mlx_evaluate(shape, budget, options, ctx)
    return servers_evaluate(shape, budget, options, ctx, engine)
