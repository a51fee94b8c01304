"""The live metrics' calls of the daemon client (mixed into DaemonClient)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
from pydantic import BaseModel

from roundhouse.api.metrics import MetricsHistory, MetricsSnapshot

M = TypeVar("M", bound=BaseModel)


class MetricsMixin:
    """Per-instance figures sampled by the daemon (`/api/v1/metrics`)."""

    if TYPE_CHECKING:
        # Provided by DaemonClient.
        base_url: str
        _http: httpx.AsyncClient

        async def _request(self, method: str, path: str, model: type[M], **kwargs: Any) -> M: ...

        async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response: ...

        def _stream(
            self, path: str, event_names: tuple[str, ...], *, method: str = "GET", **kwargs: Any
        ) -> AsyncGenerator[tuple[str, str], None]: ...

    async def metrics(self) -> MetricsSnapshot:
        return await self._request("GET", "/metrics/instances", MetricsSnapshot)

    async def metrics_history(self, window_s: float, instance: str | None = None) -> MetricsHistory:
        params: dict[str, Any] = {"window": window_s}
        if instance is not None:
            params["instance"] = instance
        return await self._request("GET", "/metrics/history", MetricsHistory, params=params)

    async def metrics_csv(self, window_s: float) -> str:
        response = await self._send("GET", "/metrics/export.csv", params={"window": window_s})
        return response.text

    async def stream_metrics(self) -> AsyncGenerator[MetricsSnapshot, None]:
        """The latest snapshot, then each new one as the daemon takes it."""
        async with aclosing(self._stream("/metrics/stream", ("metrics",))) as events:
            async for _, data in events:
                yield MetricsSnapshot.model_validate_json(data)
