"""Route of "will it fit": verdict, breakdown and advice for a Hub choice or a library model."""

from __future__ import annotations

from fastapi import APIRouter

from roundhouse.api.fit import FitQuery, ModelFit
from roundhouse.server.deps import Fitter, ModelsOpen

router = APIRouter(tags=["fit"], dependencies=[ModelsOpen])


@router.post("/fit", response_model=ModelFit)
async def fit(query: FitQuery, fitter: Fitter) -> ModelFit:
    """Estimate memory per device (weights, KV cache, compute, footprint) against what is
    free now, with a verdict and the changes that make it fit. Hub models are sized from
    their GGUF header (read over HTTP Range) or config.json, before any download."""
    return await fitter.fit(query)
