"""The engine's own tokens/s for vLLM, read from its /metrics through a real daemon: the
vLLM STAND-IN paces its tokens, and the daemon's figure, the CLI and the Prometheus text say
that pace."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import httpx
from openai import OpenAI

from roundhouse.api.engines import EngineId
from roundhouse.api.metrics import InstanceMetrics, MetricsSnapshot
from roundhouse.client import DaemonClient
from roundhouse.core.engines.metrics import parse_prometheus
from tests.daemon_process import DaemonProcess, start_daemon
from tests.fakes.launchers import start_vllm_serve
from tests.processes import free_port
from tests.support import cli

MODEL = "org/paced"
DELAY_S = 0.02  # the stand-in's pace: 50 tokens/s, and 20 ms of "prefill"
PROMPT_TOKENS = 2  # "Count." as the stand-in counts: one word and the role


def _chat(daemon: DaemonProcess) -> None:
    client = OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=30)
    with client:
        stream = client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "Count."}],
            max_tokens=12,
            stream=True,
        )
        for _ in stream:
            pass


def _point(daemon: DaemonProcess, instance_id: str) -> InstanceMetrics | None:
    headers = {"authorization": f"Bearer {daemon.token}"}
    reply = httpx.get(daemon.url + "/api/v1/metrics/instances", headers=headers, trust_env=False)
    snapshot = MetricsSnapshot.model_validate(reply.json())
    return next((p for p in snapshot.instances if p.instance == instance_id), None)


def _monitor(daemon: DaemonProcess) -> str:
    done = cli.roundhouse(daemon, "monitor")
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_vllm_generation_and_prompt_rates_from_its_histograms(tmp_path: Path) -> None:
    standin = start_vllm_serve(tmp_path / "vllm", free_port(), MODEL, "--token-delay", str(DELAY_S))
    daemon = start_daemon(tmp_path / "home", env={"OLLAMA_HOST": f"127.0.0.1:{free_port()}"})
    try:

        async def find() -> str:
            async with DaemonClient(daemon.url, daemon.token) as client:
                found = (await client.scan_instances()).instances
                return next(i.id for i in found if i.port == standin.port)

        instance_id = asyncio.run(find())
        # Chats until a scrape after some of them is compared with one before (scrapes come
        # every 5 s while the figures are read, as here).
        deadline = time.monotonic() + 40
        while True:
            _chat(daemon)
            mine = _point(daemon, instance_id)
            if mine is not None and mine.engine_output_tps is not None:
                break
            assert time.monotonic() < deadline, mine
        assert mine.engine == EngineId.VLLM.value
        assert "vllm:request_time_per_output_token_seconds_count" in mine.engine_figures
        # 20 ms a token: 50 tok/s, less what a loaded machine adds to the stand-in's sleeps.
        assert 30 < mine.engine_output_tps <= 51, mine.engine_output_tps
        # 2 prompt tokens in the 20 ms before the first token: about 100 tok/s.
        assert mine.engine_prompt_tps is not None
        assert 60 < mine.engine_prompt_tps <= PROMPT_TOKENS / DELAY_S * 1.02, mine

        table = _monitor(daemon)
        row = next(line for line in table.splitlines() if instance_id in line)
        assert re.search(r"\b\d\d\.\d/\d+\b", row), table

        headers = {"authorization": f"Bearer {daemon.token}"}
        text = httpx.get(daemon.url + "/metrics", headers=headers, trust_env=False).text
        name = "roundhouse_instance_engine_output_tokens_per_second"
        exported = parse_prometheus(
            "\n".join(line for line in text.splitlines() if instance_id in line), [name]
        )
        assert 30 < exported[name] <= 51, text
    finally:
        daemon.stop(timeout=60)
        standin.stop()
