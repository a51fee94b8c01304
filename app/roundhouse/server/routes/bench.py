"""Routes of the serving benchmark: start one, follow it, list, show, export, delete results."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from roundhouse.api.bench import (
    AbProgress,
    AbRequest,
    BenchList,
    BenchProgress,
    BenchRequest,
    BenchResult,
    ExportFormat,
    ServingContext,
)
from roundhouse.core.bench.ab import plan_arms
from roundhouse.core.bench.export import export
from roundhouse.core.bench.serving import serving_context
from roundhouse.core.gateway.gateway import Gateway
from roundhouse.core.instances.service import InstanceService
from roundhouse.server.deps import Ab, Bench, Instances, Services, TheGateway

router = APIRouter(prefix="/bench", tags=["bench"])

_MEDIA = {
    ExportFormat.JSON: "application/json",
    ExportFormat.CSV: "text/csv; charset=utf-8",
    ExportFormat.MD: "text/markdown; charset=utf-8",
}


async def _engine_of(
    gateway: Gateway, instances: InstanceService, model: str
) -> tuple[str | None, ServingContext | None]:
    """The engine serving `model` now, to label the result, and the context of the instance
    that serves it, for the advice on context failures (None when not known)."""
    # The gateway's own names first ("tiny-llama-q8" for a library file), as the
    # benchmark asks the gateway by them; then an engine's ids, the file's path.
    for listed in gateway.listed():
        if listed.model.id == model:
            info = listed.instance
            serving = None
            if info is not None:
                serving = await serving_context(info, await instances.upstream_key(info.id))
            return listed.model.engine.value, serving
    for info in instances.all(memory=False):
        if model in info.models or info.model == model:
            key = await instances.upstream_key(info.id)
            return info.engine.value, await serving_context(info, key)
    return None, None


@router.post("/ab", response_model=AbProgress, status_code=202)
async def start_ab(request: AbRequest, services: Services, ab: Ab) -> AbProgress:
    """Benchmark one model on each engine back to back; follow it at GET /bench/ab/{id}."""
    arms = plan_arms(request, await services.engines())
    return ab.start(request, arms)


@router.get("/ab/{ab_id}", response_model=AbProgress)
async def ab_progress(ab_id: str, ab: Ab) -> AbProgress:
    return ab.progress(ab_id)


@router.post("/ab/{ab_id}/cancel", response_model=AbProgress)
async def cancel_ab(ab_id: str, ab: Ab) -> AbProgress:
    return ab.cancel(ab_id)


@router.post("", response_model=BenchProgress, status_code=202)
async def start_bench(
    request: BenchRequest, bench: Bench, gateway: TheGateway, instances: Instances
) -> BenchProgress:
    """Start a benchmark through the gateway; follow it at GET /bench/{id}/progress."""
    engine, serving = await _engine_of(gateway, instances, request.model)
    return bench.start(request, engine, serving)


@router.get("", response_model=BenchList)
async def list_bench(bench: Bench) -> BenchList:
    """The kept results, newest first."""
    return bench.results()


@router.get("/{bench_id}/progress", response_model=BenchProgress)
async def bench_progress(bench_id: str, bench: Bench) -> BenchProgress:
    return bench.progress(bench_id)


@router.post("/{bench_id}/cancel", response_model=BenchProgress)
async def cancel_bench(bench_id: str, bench: Bench) -> BenchProgress:
    return bench.cancel(bench_id)


@router.get("/{bench_id}", response_model=BenchResult)
async def bench_result(bench_id: str, bench: Bench) -> BenchResult:
    return bench.result(bench_id)


@router.get("/{bench_id}/export")
async def export_bench(
    bench_id: str,
    bench: Bench,
    fmt: Annotated[ExportFormat, Query(alias="format")] = ExportFormat.MD,
) -> Response:
    """The result as JSON, CSV or a Markdown table shaped like vLLM's."""
    text = export(bench.result(bench_id), fmt)
    return Response(content=text, media_type=_MEDIA[fmt])


@router.delete("/{bench_id}", status_code=204, response_class=Response)
async def delete_bench(bench_id: str, bench: Bench) -> Response:
    bench.delete(bench_id)
    return Response(status_code=204)
