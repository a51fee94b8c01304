"""How a library model with no preset is started: settings the fit estimate chose, in words.

`choose_launch` is pure (the model, its engine and the estimate in; the start request and
the sentence that says what was chosen and why out); `plan_launch` asks the estimate first.
A saved preset replaces all of this: it is the user's own choice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.fit import FitEngine, FitOptions, FitQuery, FitReport, start_context
from roundhouse.api.instances import StartRequest
from roundhouse.api.library import LibraryModel
from roundhouse.core.errors import RoundhouseError


@dataclass(frozen=True)
class Launch:
    """A start request and the words that say what it chose and why."""

    request: StartRequest
    why: str


# The fit estimate for a library model: `ModelFitter.fit` (a query in, a report out).
FitFor = Callable[[FitQuery], Awaitable[FitReport]]

_ONE_REQUEST_ENGINES = frozenset({EngineId.LLAMA_CPP})


def choose_launch(
    model: LibraryModel,
    engine: EngineId,
    served_id: str,
    report: FitReport | None,
    problem: str | None = None,
) -> Launch:
    """The start request for `model` on `engine`, from the estimate `report` (None: it could
    not be made, `problem` says why)."""
    if engine == EngineId.OLLAMA:
        # Ollama serves every model it holds from one server and sizes each load itself.
        return Launch(
            StartRequest(engine=EngineId.OLLAMA),
            "Ollama, which serves every model it holds and chooses each one's context and "
            "GPU layers itself.",
        )
    path = model.path or model.name
    if engine == EngineId.MLX:
        # mlx_lm.server takes no context or layer options: it grows its cache as it goes.
        options = InstanceOptions(model=path)
        fit = f" The estimate: {report.summary}" if report else ""
        return Launch(
            StartRequest(engine=engine, options=options),
            "mlx_lm.server with its own settings (it takes no context or layer options; "
            f"Apple's unified memory holds the whole model).{fit}",
        )
    served = served_id
    if report is None:
        options = InstanceOptions(model=path, served_name=served)
        return Launch(
            StartRequest(engine=engine, options=options),
            f"{_engine_words(engine)} with its own defaults: the fit estimate could not size "
            f"this model ({problem or 'no reason given'}).",
        )
    context, why_context = start_context(report)
    if engine in _ONE_REQUEST_ENGINES:
        options = InstanceOptions(
            model=path,
            ctx_size=context,
            n_gpu_layers=report.gpu_layers,
            parallel=report.n_parallel,
            served_name=served,
        )
        layers = (
            "every layer on the GPU"
            if report.gpu_layers >= report.total_layers and report.gpu_layers > 0
            else "on the CPU only"
            if report.gpu_layers == 0
            else f"{report.gpu_layers} of {report.total_layers} layers on the GPU, the rest "
            "on the CPU"
        )
        chosen = f"llama.cpp, a {context}-token context, {layers}"
    else:
        options = InstanceOptions(model=path, max_model_len=context, served_name=served)
        chosen = f"{_engine_words(engine)}, a {context}-token context"
    return Launch(
        StartRequest(engine=engine, options=options),
        f"{chosen}, chosen by the fit estimate: {report.summary}{why_context} A preset "
        "saved for this model replaces these settings.",
    )


def _engine_words(engine: EngineId) -> str:
    return {
        EngineId.LLAMA_CPP: "llama.cpp",
        EngineId.VLLM: "vLLM",
        EngineId.SGLANG: "SGLang",
        EngineId.MLX: "mlx_lm.server",
    }.get(engine, engine.value)


async def plan_launch(
    fit: FitFor | None, model: LibraryModel, engine: EngineId, served_id: str
) -> Launch:
    """Ask the fit estimate (on this machine, now), then choose the start from it."""
    if engine == EngineId.OLLAMA or fit is None:
        return choose_launch(model, engine, served_id, None, "no estimate is available")
    try:
        fit_engine = FitEngine(engine.value)
    except ValueError:
        return choose_launch(model, engine, served_id, None, f"{engine.value} is not estimated")
    try:
        report = await fit(
            FitQuery(library_id=model.id, options=FitOptions(engine=fit_engine, n_parallel=1))
        )
    except RoundhouseError as exc:
        return choose_launch(model, engine, served_id, None, exc.detail)
    return choose_launch(model, engine, served_id, report)
