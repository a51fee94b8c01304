"""Launch-to-ready of llama-server on the tiny model: start_engine against a plain script."""

from __future__ import annotations

import asyncio
import inspect
import os
import statistics
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, LaunchParams, LaunchPlan
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.launch import build_launch
from roundhouse.core.supervise import ensure_port_free, start_engine
from roundhouse.core.supervise.readiness import _listener, check_identity
from tests.processes import free_port

RUNS = 10
# start_engine's own default poll interval; the plain script polls at the same pace.
DEFAULT_POLL_S: float = inspect.signature(start_engine).parameters["poll_s"].default
# A fine poll that hides little of the fixed cost of each side behind the poll's rounding.
FINE_POLL_S = 0.01
MAX_RATIO = 1.2


def _plan(binary: Path, model: Path) -> LaunchPlan:
    spec = load_catalog().spec(EngineId.LLAMA_CPP)
    detected = DetectedEngine(
        id=EngineId.LLAMA_CPP, found_by=FoundBy.PATH, path=str(binary), where="test build"
    )
    params = LaunchParams(model=str(model), port=free_port(), ctx_size=512, parallel=1)
    return build_launch(spec, detected, params)


def _ours(plan: LaunchPlan, log_path: Path, poll_s: float) -> float:
    async def main() -> float:
        started = time.perf_counter()
        running = await start_engine(plan, log_path, ready_timeout_s=60, poll_s=poll_s)
        took = time.perf_counter() - started
        await running.process.stop()
        return took

    return asyncio.run(main())


def _plain(plan: LaunchPlan, log_path: Path, poll_s: float) -> float:
    """What a hand-written launcher does: Popen, then GET the health URL until it is ready."""
    # No proxy for loopback, as start_engine's trust_env=False.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with log_path.open("wb") as log:
        started = time.perf_counter()
        proc = subprocess.Popen(
            list(plan.argv),
            env={**os.environ, **plan.env},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            while True:
                try:
                    with opener.open(plan.probe_url, timeout=5) as response:
                        if response.status == plan.readiness.ready_status:
                            break
                except (urllib.error.URLError, ConnectionError):
                    pass  # refused, or 503 while loading (HTTPError is a URLError)
                assert proc.poll() is None, f"llama-server exited with {proc.returncode}"
                time.sleep(poll_s)
            took = time.perf_counter() - started
        finally:
            proc.terminate()
            proc.wait(10)
    return took


def _interleaved(
    binary: Path, model: Path, folder: Path, poll_s: float
) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    plain: list[float] = []
    runners: list[tuple[list[float], Callable[[LaunchPlan, Path, float], float]]] = [
        (ours, _ours),
        (plain, _plain),
    ]
    for run in range(RUNS):
        # Alternate who goes first, so neither always meets a just-freed CPU or warm cache.
        for times, runner in runners if run % 2 == 0 else runners[::-1]:
            log = folder / f"{runner.__name__}-{poll_s}-{run}.log"
            times.append(runner(_plan(binary, model), log, poll_s))
    return ours, plain


def _costs(binary: Path, model: Path, folder: Path) -> dict[str, float]:
    """Milliseconds of start_engine's own steps, measured on one running engine."""

    async def main() -> dict[str, float]:
        plan = _plan(binary, model)
        costs: dict[str, float] = {}
        started = time.perf_counter()
        ensure_port_free(plan.host, plan.port)
        costs["port_probe_ms"] = time.perf_counter() - started
        running = await start_engine(plan, folder / "costs.log", ready_timeout_s=60)
        try:
            async with httpx.AsyncClient(trust_env=False) as http:
                # As in start_engine, the client has already sent the readiness probes.
                await http.get(plan.probe_url)
                started = time.perf_counter()
                await check_identity(plan, running.process.pid, http)
                costs["identity_check_ms"] = time.perf_counter() - started
            started = time.perf_counter()
            _listener(plan.port, running.process.pid)
            costs["listener_lookup_ms"] = time.perf_counter() - started
            # start_engine makes one per start, without TLS (plain http on loopback).
            started = time.perf_counter()
            async with httpx.AsyncClient(trust_env=False, verify=False):
                costs["http_client_ms"] = time.perf_counter() - started
        finally:
            await running.process.stop()
        return {key: round(1000 * value, 1) for key, value in costs.items()}

    return asyncio.run(main())


@pytest.mark.perf
def test_launch_to_ready_against_a_plain_script(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path: Path, report: Any
) -> None:
    # Warm-up, not counted: the binary and the model into the page cache for both sides.
    _ours(_plan(llama_server_binary, tiny_gguf), tmp_path / "warm-ours.log", DEFAULT_POLL_S)
    _plain(_plan(llama_server_binary, tiny_gguf), tmp_path / "warm-plain.log", DEFAULT_POLL_S)

    ratios: dict[float, float] = {}
    for poll_s in (DEFAULT_POLL_S, FINE_POLL_S):
        ours, plain = _interleaved(llama_server_binary, tiny_gguf, tmp_path, poll_s)
        ours_median, plain_median = statistics.median(ours), statistics.median(plain)
        ratios[poll_s] = ours_median / plain_median
        tag = f"poll_{poll_s:g}s"
        report.add(f"{tag}_start_engine_median_ms", round(1000 * ours_median, 1))
        report.add(f"{tag}_plain_script_median_ms", round(1000 * plain_median, 1))
        report.add(f"{tag}_ratio", round(ratios[poll_s], 3))
        report.add(f"{tag}_start_engine_ms", [round(1000 * t, 1) for t in ours])
        report.add(f"{tag}_plain_script_ms", [round(1000 * t, 1) for t in plain])
    for key, value in _costs(llama_server_binary, tiny_gguf, tmp_path).items():
        report.add(key, value)
    report.add("runs_each", RUNS)
    report.add("budget", f"median start_engine / plain script <= {MAX_RATIO} at the default poll")
    assert ratios[DEFAULT_POLL_S] <= MAX_RATIO
