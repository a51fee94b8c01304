"""The supervisor running a real mlx_lm.server (mlx[cpu] on Linux) on the tiny HF model.

Through Roundhouse's own path: detection in a chosen Python, the catalog entry, the launch
builder, start_engine (ready, identity), then OpenAI chat on the engine's port, and stop.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, LaunchParams, LaunchPlan
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.detect import detect_engine
from roundhouse.core.engines.host import LocalEngineHost
from roundhouse.core.engines.launch import build_launch
from roundhouse.core.supervise import ExitKind, Listener, Progress, RunningEngine, start_engine
from tests.processes import assert_nothing_left, free_port

REPO_ID = "roundhouse/tiny-llama"
MAX_TOKENS = 8
CHAT: dict[str, Any] = {
    "messages": [{"role": "user", "content": "Say hello to the world."}],
    "max_tokens": MAX_TOKENS,
    "temperature": 0,
}


def _detected(python: str) -> DetectedEngine:
    spec = load_catalog().spec(EngineId.MLX)
    found, missing = detect_engine(LocalEngineHost(), spec, pythons=[python])
    assert missing is None, missing
    hit = next(h for h in found if h.found_by == FoundBy.PYTHON)
    assert hit.python == python and hit.module == "mlx_lm.server" and hit.version
    return hit


def _plan(python: str, model: str, hf_hub_cache: Path) -> LaunchPlan:
    spec = load_catalog().spec(EngineId.MLX)
    params = LaunchParams(model=model, port=free_port(), parallel=1)
    return build_launch(spec, _detected(python), params, hf_hub_cache=str(hf_hub_cache))


async def _chat(http: httpx.AsyncClient, plan: LaunchPlan, **extra: Any) -> dict[str, Any]:
    response = await http.post(f"{plan.base_url}/v1/chat/completions", json={**CHAT, **extra})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def _stream(http: httpx.AsyncClient, plan: LaunchPlan, **extra: Any) -> tuple[str, Any]:
    """The streamed reply's text and its usage chunk (include_usage)."""
    body = {**CHAT, **extra, "stream": True, "stream_options": {"include_usage": True}}
    text, usage, done = "", None, False
    async with http.stream("POST", f"{plan.base_url}/v1/chat/completions", json=body) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        async for line in reply.aiter_lines():
            if not line.startswith("data: "):
                continue  # blank separators and ": keepalive" comments
            if line == "data: [DONE]":
                done = True
                break
            chunk = json.loads(line.removeprefix("data: "))
            for choice in chunk["choices"]:
                text += choice["delta"].get("content") or ""
            usage = chunk.get("usage") or usage
    assert done, "no [DONE]"
    return text, usage


async def _stop(running: RunningEngine) -> None:
    proc = running.process
    stopping = time.monotonic()
    outcome = await proc.stop()
    print(f"mlx_lm.server stopped in {time.monotonic() - stopping:.2f} s: {outcome.kind}")
    assert outcome.kind == ExitKind.STOPPED, str(outcome)
    assert_nothing_left(proc.pid, proc.pid)


def test_local_folder_start_ready_verified_chat_stream_stop(
    mlx_python: str, tiny_hf_model: Path, home_root: Path, tmp_path: Path
) -> None:
    assert any(ord(c) > 127 for c in str(tiny_hf_model)) and " " in str(tiny_hf_model)
    # The server lists the folder resolved: reach it through a link to prove the plan agrees.
    link = tmp_path / "link to model"
    link.symlink_to(tiny_hf_model, target_is_directory=True)
    cache = tmp_path / "hf cache"
    cache.mkdir()
    listed = str(tiny_hf_model.resolve())
    plan = _plan(mlx_python, str(link), cache)
    assert plan.env == {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    assert plan.expected_model_id == listed
    progress: list[Progress] = []
    log_path = home_root / "logs" / "mlx 1.log"

    async def main() -> None:
        started = time.monotonic()
        running = await start_engine(
            plan, log_path, ready_timeout_s=60, on_progress=progress.append
        )
        print(f"mlx_lm.server ready in {time.monotonic() - started:.2f} s: {running.identity}")
        try:
            assert running.identity.model_ids == (listed,)
            assert running.identity.listener in (Listener.OURS, Listener.UNVERIFIED)
            if running.identity.listener == Listener.OURS:
                assert running.identity.listener_pid == running.process.pid
            async with httpx.AsyncClient(trust_env=False, timeout=60) as http:
                health = await http.get(plan.probe_url)
                assert health.json() == {"status": "ok"}
                body = await _chat(http, plan)
                choice = body["choices"][0]
                assert choice["message"]["role"] == "assistant"
                assert choice["message"]["content"]
                # The tiny model never picks an end token: every reply runs to max_tokens.
                assert choice["finish_reason"] == "length"
                assert body["usage"]["completion_tokens"] == MAX_TOKENS
                assert body["usage"]["prompt_tokens"] > 0

                text, usage = await _stream(http, plan)
                # Greedy: the same tokens whether streamed or not.
                assert text == choice["message"]["content"]
                assert usage["completion_tokens"] == MAX_TOKENS
        finally:
            await _stop(running)

    asyncio.run(main())
    assert progress[-1].phase == "ready"
    assert "Starting httpd" in log_path.read_text(encoding="utf-8")


def test_hub_repo_id_from_the_cache_offline(
    mlx_python: str, tiny_hf_hub_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A repo id stays online in the plan; the test machine has no network, so say so.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    plan = _plan(mlx_python, REPO_ID, tiny_hf_hub_cache)
    assert plan.env == {"HF_HUB_CACHE": str(tiny_hf_hub_cache)}
    assert os.environ["HF_HUB_OFFLINE"] == "1"

    async def main() -> None:
        running = await start_engine(plan, tmp_path / "mlx.log", ready_timeout_s=60)
        try:
            # Listed because the snapshot has config, index and tokenizer_config.
            assert REPO_ID in running.identity.model_ids
            async with httpx.AsyncClient(trust_env=False, timeout=60) as http:
                # Naming the served repo (not another one, which it would download).
                body = await _chat(http, plan, model=REPO_ID)
                assert body["model"] == REPO_ID
                assert body["usage"]["completion_tokens"] == MAX_TOKENS
                text, usage = await _stream(http, plan)
                assert text == body["choices"][0]["message"]["content"]
                assert usage["completion_tokens"] == MAX_TOKENS
        finally:
            await _stop(running)

    asyncio.run(main())
