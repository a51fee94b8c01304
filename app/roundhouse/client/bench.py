"""The serving benchmark's calls of the daemon client (mixed into DaemonClient)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from roundhouse.api.bench import (
    AbProgress,
    AbRequest,
    BenchList,
    BenchProgress,
    BenchRequest,
    BenchResult,
    BenchState,
    ExportFormat,
)
from roundhouse.client.errors import ClientError

M = TypeVar("M", bound=BaseModel)
_JSON = {"Content-Type": "application/json"}
# Progress is polled: a benchmark runs for seconds to hours and its state is one small object.
POLL_S = 0.25


class BenchFailedError(ClientError):
    """A benchmark that ended without a result; str() says why."""


def _bench(bench_id: str) -> str:
    return "/bench/" + quote(bench_id, safe="")


class BenchMixin:
    """Benchmarks run by the daemon (`/api/v1/bench`)."""

    if TYPE_CHECKING:
        # Provided by DaemonClient.
        base_url: str
        _http: httpx.AsyncClient

        async def _request(self, method: str, path: str, model: type[M], **kwargs: Any) -> M: ...

        async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response: ...

    async def start_bench(self, request: BenchRequest) -> BenchProgress:
        body = request.model_dump_json()
        return await self._request("POST", "/bench", BenchProgress, content=body, headers=_JSON)

    async def bench_progress(self, bench_id: str) -> BenchProgress:
        return await self._request("GET", _bench(bench_id) + "/progress", BenchProgress)

    async def cancel_bench(self, bench_id: str) -> BenchProgress:
        return await self._request("POST", _bench(bench_id) + "/cancel", BenchProgress)

    async def bench_result(self, bench_id: str) -> BenchResult:
        return await self._request("GET", _bench(bench_id), BenchResult)

    async def bench_results(self) -> BenchList:
        return await self._request("GET", "/bench", BenchList)

    async def delete_bench(self, bench_id: str) -> None:
        await self._send("DELETE", _bench(bench_id))

    async def export_bench(self, bench_id: str, fmt: ExportFormat) -> str:
        response = await self._send(
            "GET", _bench(bench_id) + "/export", params={"format": fmt.value}
        )
        return response.text

    async def run_bench(
        self,
        request: BenchRequest,
        on_progress: Callable[[BenchProgress], None] | None = None,
    ) -> BenchResult:
        """Start a benchmark and wait for its result; a failed one raises BenchFailedError."""
        progress = await self.start_bench(request)
        while progress.state is BenchState.RUNNING:
            if on_progress is not None:
                on_progress(progress)
            await asyncio.sleep(POLL_S)
            progress = await self.bench_progress(progress.id)
        if progress.state is not BenchState.DONE:
            raise BenchFailedError(progress.error or f"The benchmark was {progress.state.value}.")
        return await self.bench_result(progress.id)

    async def start_ab(self, request: AbRequest) -> AbProgress:
        body = request.model_dump_json()
        return await self._request("POST", "/bench/ab", AbProgress, content=body, headers=_JSON)

    async def ab_progress(self, ab_id: str) -> AbProgress:
        return await self._request("GET", "/bench/ab/" + quote(ab_id, safe=""), AbProgress)

    async def cancel_ab(self, ab_id: str) -> AbProgress:
        path = "/bench/ab/" + quote(ab_id, safe="") + "/cancel"
        return await self._request("POST", path, AbProgress)

    async def run_ab(
        self,
        request: AbRequest,
        on_progress: Callable[[AbProgress], None] | None = None,
    ) -> list[BenchResult]:
        """Run an A/B and wait for it: a result per engine, in order (BenchFailedError if not)."""
        progress = await self.start_ab(request)
        while progress.state is BenchState.RUNNING:
            if on_progress is not None:
                on_progress(progress)
            await asyncio.sleep(POLL_S)
            progress = await self.ab_progress(progress.id)
        if progress.state is not BenchState.DONE:
            raise BenchFailedError(progress.error or f"The A/B run was {progress.state.value}.")
        return [await self.bench_result(i) for i in progress.result_ids]
