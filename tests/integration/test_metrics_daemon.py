"""Metrics through a real daemon and the real llama-server: the figures move while a chat
streams through the gateway; history, CSV and the Prometheus text follow."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from openai import OpenAI

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo
from roundhouse.api.metrics import SERIES, InstanceMetrics, MetricsSnapshot
from roundhouse.client import DaemonClient
from roundhouse.core.engines.metrics import parse_prometheus
from tests.daemon_process import DaemonProcess, path_with, start_daemon
from tests.fakes.ollama import start_standin
from tests.processes import free_port
from tests.support import cli
from tests.support.serving import llama_cpp, serving

READY_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def served(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DaemonProcess, InstanceInfo]]:
    root = tmp_path_factory.mktemp("metrics") / "home"
    request = llama_cpp(tiny_gguf, ctx_size=512)
    env = path_with(llama_server_binary)
    with serving(root, request, env=env, ready_timeout_s=READY_TIMEOUT_S) as (daemon, [info]):
        yield daemon, info


def _chat(daemon: DaemonProcess, model: str, max_tokens: int) -> None:
    client = OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60)
    with client:
        stream = client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": "Count."}],
            max_tokens=max_tokens,
            stream=True,
        )
        for _ in stream:
            pass


async def _watch_while_streaming(
    daemon: DaemonProcess, info: InstanceInfo
) -> list[MetricsSnapshot]:
    seen: list[MetricsSnapshot] = []
    chat = threading.Thread(target=_chat, args=(daemon, info.models[0], 200))
    async with DaemonClient(daemon.url, daemon.token) as client:
        started = time.monotonic()
        async for snapshot in client.stream_metrics():
            answered = [p.requests for p in snapshot.instances if p.instance == info.id]
            if not answered:
                continue  # the instance is younger than the latest tick
            if not seen:
                chat.start()  # once a tick has the instance: its rate needs one before
            seen.append(snapshot)
            if not chat.is_alive() and answered and answered[0] >= 1:
                break
            if time.monotonic() - started > 60:
                break
    chat.join()
    return seen


def test_stream_moves_tokens_per_second_and_latencies(
    served: tuple[DaemonProcess, InstanceInfo],
) -> None:
    daemon, info = served
    seen = asyncio.run(_watch_while_streaming(daemon, info))
    mine = [p for s in seen for p in s.instances if p.instance == info.id]
    assert mine, seen
    assert max(p.output_tps for p in mine) > 0, [p.output_tps for p in mine]
    last = mine[-1]
    assert last.requests >= 1
    assert last.output_tokens > 0
    assert last.ttft_ms is not None and last.ttft_ms > 0
    assert last.cpu_percent is not None and last.rss_bytes and last.rss_bytes > 0


def test_history_csv_and_prometheus_text(served: tuple[DaemonProcess, InstanceInfo]) -> None:
    daemon, info = served
    _chat(daemon, info.models[0], 16)
    time.sleep(1.5)  # one tick after the reply
    headers = {"authorization": f"Bearer {daemon.token}"}
    with httpx.Client(base_url=daemon.url, headers=headers, trust_env=False) as http:
        history = http.get("/api/v1/metrics/history", params={"window": 120}).json()
        series = next(s for s in history["series"] if s["instance"] == info.id)
        assert history["resolution_s"] == 1.0
        assert len(series["t"]) >= 2
        assert set(series["values"]) == set(SERIES)

        exported = http.get("/api/v1/metrics/export.csv", params={"window": 60})
        assert exported.status_code == 200
        rows = list(csv.reader(io.StringIO(exported.text)))
        assert rows[0][:2] == ["t", "instance"] and any(r[1] == info.id for r in rows[1:])

        text = http.get("/metrics")
        assert text.headers["content-type"].startswith("text/plain")
        values = parse_prometheus(
            text.text,
            ["roundhouse_instance_requests_total", "roundhouse_instance_output_tokens_total"],
        )
        assert values["roundhouse_instance_requests_total"] >= 1
        assert values["roundhouse_instance_output_tokens_total"] > 0

        assert http.get("/api/v1/metrics/history", params={"window": 0}).status_code == 422
    assert httpx.get(daemon.url + "/metrics", trust_env=False).status_code == 401


def _monitor(daemon: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return cli.roundhouse(daemon, "monitor", *args)


def test_cli_monitor_table_json_csv_and_a_bad_window(
    served: tuple[DaemonProcess, InstanceInfo], tmp_path: Path
) -> None:
    daemon, info = served
    table = _monitor(daemon)
    assert table.returncode == 0, table.stderr
    assert info.id in table.stdout and "tok/s" in table.stdout
    answer = json.loads(_monitor(daemon, "--json").stdout)
    assert any(p["instance"] == info.id for p in answer["instances"])
    target = tmp_path / "m.csv"
    exported = _monitor(daemon, "--csv", str(target), "--window", "2m")
    assert exported.returncode == 0, exported.stderr
    assert target.read_text(encoding="utf-8").startswith("t,instance,output_tps")
    bad = _monitor(daemon, "--window", "soon")
    assert bad.returncode == 1
    assert "is not a time window" in bad.stderr + bad.stdout
    assert "Traceback" not in bad.stderr


def test_llama_server_timings_give_the_engine_side_rates(
    served: tuple[DaemonProcess, InstanceInfo],
) -> None:
    daemon, info = served
    _chat(daemon, info.models[0], 24)
    deadline = time.monotonic() + 10
    while True:
        mine = _point(daemon, info.id)
        if mine is not None and mine.engine_output_tps is not None:
            break
        assert time.monotonic() < deadline, mine
        time.sleep(0.3)
    # llama-server measured them itself: the `timings` of its last chunk.
    assert mine.engine_output_tps > 0
    assert mine.engine_prompt_tps is None or mine.engine_prompt_tps > 0
    table = _monitor(daemon)
    assert table.returncode == 0, table.stderr
    assert "engine tok/s" in table.stdout
    assert re.search(r"\d+\.\d/(\d+|-)", table.stdout), table.stdout


def _point(daemon: DaemonProcess, instance_id: str) -> InstanceMetrics | None:
    headers = {"authorization": f"Bearer {daemon.token}"}
    reply = httpx.get(daemon.url + "/api/v1/metrics/instances", headers=headers, trust_env=False)
    snapshot = MetricsSnapshot.model_validate(reply.json())
    return next((p for p in snapshot.instances if p.instance == instance_id), None)


def test_ollama_size_vram_and_its_rate_from_the_stream(tmp_path: Path) -> None:
    """Against the Ollama stand-in: the instance's VRAM is /api/ps's size_vram (no NVML
    here), and its engine-side rate comes from the usage over the stream's duration."""
    standin = start_standin(tmp_path / "ollama", free_port(), "--token-delay", "0.01")
    daemon = start_daemon(tmp_path / "home", env={"OLLAMA_HOST": f"127.0.0.1:{standin.port}"})
    try:

        async def setup() -> str:
            async with DaemonClient(daemon.url, daemon.token) as client:
                steps = [step async for step in client.ollama_pull("tiny")]
                assert steps[-1].status == "success"
                scanned = (await client.scan_instances()).instances
                return next(i.id for i in scanned if i.engine == EngineId.OLLAMA)

        instance_id = asyncio.run(setup())
        _chat(daemon, "tiny", 20)
        deadline = time.monotonic() + 20
        while True:
            mine = _point(daemon, instance_id)
            if mine is not None and mine.vram_bytes and mine.engine_output_tps is not None:
                break
            assert time.monotonic() < deadline, mine
            time.sleep(0.5)
        assert mine.engine == "ollama"
        assert mine.engine_figures["ollama:models_loaded"] == 1
        assert mine.vram_bytes == mine.engine_figures["ollama:size_vram_bytes"] > 0
        # 20 tokens 10 ms apart: about 100 tok/s, never the 0 s of an unmeasured stream.
        assert 20 < mine.engine_output_tps < 200, mine.engine_output_tps
        assert mine.engine_prompt_tps is None  # /v1 does not say; Ollama's prompt_eval is native
    finally:
        daemon.stop(timeout=60)
        standin.stop()
