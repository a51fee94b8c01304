"""Routes of the live metrics: current figures, history, the stream, CSV and Prometheus."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import PlainTextResponse, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent

from roundhouse.api.metrics import MetricsHistory, MetricsSnapshot
from roundhouse.core.metrics.export import PROMETHEUS_CONTENT_TYPE, render_csv, render_prometheus
from roundhouse.server.deps import Metrics, Services, require_token
from roundhouse.server.streams import event, until_stopped

router = APIRouter(prefix="/metrics", tags=["metrics"])

# A day: the longest the minute ring holds.
MAX_WINDOW_S = 86400.0
Window = Annotated[
    float, Query(gt=0, le=MAX_WINDOW_S, description="seconds back from now (at most a day)")
]


@router.get("/instances", response_model=MetricsSnapshot)
async def get_current(metrics: Metrics) -> MetricsSnapshot:
    """Every instance's figures at the latest tick."""
    return metrics.snapshot()


@router.get("/history", response_model=MetricsHistory)
async def get_history(
    metrics: Metrics, window: Window = 300.0, instance: str | None = None
) -> MetricsHistory:
    """Per instance, a column per figure over the window: 1 s points within the hour, 1 min
    points beyond."""
    return metrics.history(window, instance)


@router.get("/stream", response_class=EventSourceResponse)
async def stream_metrics(services: Services, metrics: Metrics) -> AsyncIterator[ServerSentEvent]:
    """Each new snapshot as a `metrics` event, starting with the latest one."""
    yield event("metrics", metrics.snapshot())
    async for snapshot in until_stopped(metrics.subscribe(), services.stopping):
        yield event("metrics", snapshot)


@router.get("/export.csv", response_class=PlainTextResponse)
async def export_csv(metrics: Metrics, window: Window = 3600.0) -> Response:
    history = metrics.history(window)
    return Response(
        render_csv(history),
        media_type="text/csv; charset=utf-8",
        headers={"content-disposition": 'attachment; filename="roundhouse-metrics.csv"'},
    )


# Outside /api/v1, where scrapers look; it needs the daemon's token all the same (ADR 19).
prometheus_router = APIRouter(tags=["metrics"], dependencies=[Depends(require_token)])


@prometheus_router.get("/metrics", response_class=PlainTextResponse)
async def prometheus(metrics: Metrics) -> Response:
    """Roundhouse's own series in Prometheus' text format."""
    text = render_prometheus(metrics.snapshot())
    return Response(text, media_type=PROMETHEUS_CONTENT_TYPE)
