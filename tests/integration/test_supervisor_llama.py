"""The supervisor running the real llama-server on the tiny model, in a non-ASCII path."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import httpx
import psutil
import pytest

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, LaunchParams, LaunchPlan
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.launch import build_launch
from roundhouse.core.supervise import (
    EngineExitedError,
    ExitKind,
    Listener,
    PortTakenError,
    Progress,
    start_engine,
)
from tests.processes import assert_nothing_left, free_port


def _plan(binary: Path, model: Path, port: int) -> LaunchPlan:
    spec = load_catalog().spec(EngineId.LLAMA_CPP)
    detected = DetectedEngine(
        id=EngineId.LLAMA_CPP, found_by=FoundBy.PATH, path=str(binary), where="test build"
    )
    params = LaunchParams(model=str(model), port=port, ctx_size=512, parallel=1)
    return build_launch(spec, detected, params)


def test_start_ready_verified_chat_stop(
    llama_server_binary: Path, tiny_gguf: Path, home_root: Path
) -> None:
    assert any(ord(c) > 127 for c in str(tiny_gguf)) and " " in str(tiny_gguf)
    plan = _plan(llama_server_binary, tiny_gguf, free_port())
    progress: list[Progress] = []
    log_path = home_root / "logs" / "llama 1.log"

    async def main() -> None:
        started = time.monotonic()
        running = await start_engine(
            plan, log_path, ready_timeout_s=60, on_progress=progress.append
        )
        took = time.monotonic() - started
        proc = running.process
        try:
            print(f"llama-server ready in {took:.2f} s, identity {running.identity}")
            assert running.identity.model_ids[0] == str(tiny_gguf)
            # As root or the same user Linux shows the listener's pid.
            assert running.identity.listener in (Listener.OURS, Listener.UNVERIFIED)
            if running.identity.listener == Listener.OURS:
                assert running.identity.listener_pid == proc.pid
            async with httpx.AsyncClient(trust_env=False, timeout=30) as http:
                response = await http.post(
                    f"{plan.base_url}/chat/completions",
                    json={
                        "messages": [{"role": "user", "content": "Hello"}],
                        "max_tokens": 8,
                        "temperature": 0,
                    },
                )
            assert response.status_code == 200, response.text
            assert response.json()["usage"]["completion_tokens"] == 8
        finally:
            stopping = time.monotonic()
            outcome = await proc.stop()
            print(f"stopped in {time.monotonic() - stopping:.2f} s: {outcome.kind}")
        assert outcome.kind == ExitKind.STOPPED, str(outcome)
        assert_nothing_left(proc.pid, proc.pid)

    asyncio.run(main())
    assert progress[-1].phase == "ready"
    # The engine's own output went to its per-instance log file.
    assert "llama" in log_path.read_text(encoding="utf-8")


def test_a_second_engine_on_the_same_port_is_refused_and_named(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path: Path
) -> None:
    port = free_port()
    plan = _plan(llama_server_binary, tiny_gguf, port)

    async def main() -> None:
        running = await start_engine(plan, tmp_path / "a.log", ready_timeout_s=60)
        try:
            with pytest.raises(PortTakenError) as caught:
                await start_engine(plan, tmp_path / "b.log")
            assert caught.value.owner is not None
            assert caught.value.owner.pid == running.process.pid
            assert "llama-server" in caught.value.detail
        finally:
            await running.process.stop()
        assert_nothing_left(running.process.pid, running.process.pid)

    asyncio.run(main())


def test_a_file_that_is_not_gguf_is_a_bad_model(llama_server_binary: Path, tmp_path: Path) -> None:
    folder = tmp_path / "модели 模型"
    folder.mkdir()
    bogus = folder / "not a model.gguf"
    bogus.write_bytes(b"PK\x03\x04" + os.urandom(4096))
    plan = _plan(llama_server_binary, bogus, free_port())
    with pytest.raises(EngineExitedError) as caught:
        asyncio.run(start_engine(plan, tmp_path / "e.log", ready_timeout_s=60))
    outcome = caught.value.outcome
    assert outcome.kind == ExitKind.BAD_MODEL, str(outcome)
    assert not outcome.transient
    assert outcome.returncode not in (None, 0, -signal.SIGKILL)
    assert not [
        p for p in psutil.process_iter(["cmdline"]) if str(bogus) in (p.info["cmdline"] or [])
    ]
