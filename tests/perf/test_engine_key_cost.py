"""What the per-instance engine key (ADR 21) costs the daemon per forwarded request: the
gateway's `open` to an engine, with the key added and without, side by side in one run.

The engine is a minimal asyncio HTTP server in the same process answering `{}` at once, so
the CPU measured is the daemon's forwarding (and that server's, the same in both arms); the
only difference between the arms is the key's lookup and its header."""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any, cast

import pytest

from roundhouse.core.gateway.gateway import Gateway
from roundhouse.core.gateway.router import Route
from roundhouse.core.instances.keys import EngineKeys
from roundhouse.core.instances.service import InstanceService
from tests.unit.builders import ready_instance

ROUNDS = 8
REQUESTS_PER_ROUND = 1500
BUDGET_MS = 0.1
OK = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
BODY = b'{"model":"m","messages":[{"role":"user","content":"Say hello."}],"max_tokens":16}'


class _Keys:
    def __init__(self, key: str | None) -> None:
        self.key = key

    async def upstream_key(self, instance_id: str) -> str | None:
        return self.key


async def _engine(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.lower().split(b"\r\n")
                if line.startswith(b"content-length:")
            )
            await reader.readexactly(length)
            writer.write(OK)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


def _route(url: str) -> Route:
    port = int(url.rsplit(":", 1)[1])
    return Route(ready_instance("perf", model="m", port=port, models=["m"]), "m")


async def _round(gateway: Gateway, route: Route) -> float:
    """CPU seconds per request over one round."""
    start = time.process_time()
    for _ in range(REQUESTS_PER_ROUND):
        reply = await gateway.open(route, "chat/completions", BODY, stream=False)
        await reply.aread()
        reply.close()
    return (time.process_time() - start) / REQUESTS_PER_ROUND


@pytest.mark.perf
def test_the_engine_key_costs_the_daemon_almost_nothing(report: Any, tmp_path: Any) -> None:
    key = EngineKeys(tmp_path).key_for("perf")

    async def main() -> tuple[list[float], list[float]]:
        server = await asyncio.start_server(_engine, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        route = _route(url)
        keyed = Gateway(cast(InstanceService, _Keys(key)), library=list)
        bare = Gateway(cast(InstanceService, _Keys(None)), library=list)
        with_key: list[float] = []
        without: list[float] = []
        try:
            await _round(keyed, route)  # warm both pools
            await _round(bare, route)
            for _ in range(ROUNDS):
                with_key.append(await _round(keyed, route))
                without.append(await _round(bare, route))
        finally:
            await keyed.aclose()
            await bare.aclose()
            server.close()
        return with_key, without

    with_key, without = asyncio.run(main())
    keyed_ms = statistics.median(with_key) * 1000
    bare_ms = statistics.median(without) * 1000
    added = keyed_ms - bare_ms
    report.add("cpu_ms_per_request_with_key", round(keyed_ms, 4))
    report.add("cpu_ms_per_request_without_key", round(bare_ms, 4))
    report.add("added_ms_per_request", round(added, 4))
    report.add(
        "spread_ms",
        round(statistics.pstdev(w - b for w, b in zip(with_key, without, strict=True)) * 1000, 4),
    )
    assert added < BUDGET_MS, f"the key added {added:.4f} ms of CPU per request"
