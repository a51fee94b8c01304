"""A real llama-server started outside Roundhouse is found by the process scan, or left out."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from roundhouse.api.engines import EngineId
from roundhouse.api.external import AttachSource, ExternalEngine
from roundhouse.core.engines.attach import find_running_engines
from tests.processes import assert_nothing_left, free_port

READY_TIMEOUT_S = 60.0


def find(**kw: object) -> list[ExternalEngine]:
    env = {"OLLAMA_HOST": f"127.0.0.1:{free_port()}"}  # keep any real Ollama out of it
    return asyncio.run(find_running_engines(env=env, **kw))  # type: ignore[arg-type]


@pytest.fixture
def llama_server(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """llama-server run as a user would, in its own session, ready (/health 200)."""
    port = free_port()
    argv = [str(llama_server_binary), "-m", str(tiny_gguf), "--host", "127.0.0.1"]
    argv += ["--port", str(port), "-c", "256", "-np", "1", "-a", "tiny-alias"]
    log = tmp_path / "llama-server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        with httpx.Client(trust_env=False, timeout=2.0) as http:
            while True:
                assert proc.poll() is None, log.read_text(errors="replace")
                try:
                    if http.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.05)
        yield proc, port
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        assert_nothing_left(proc.pid, proc.pid)


def test_llama_server_is_found_with_its_model_id_and_excluded_by_pid(
    llama_server: tuple[subprocess.Popen[bytes], int],
) -> None:
    proc, port = llama_server
    (entry,) = [e for e in find() if e.pid == proc.pid]
    assert entry.engine == EngineId.LLAMA_CPP and entry.found_by == AttachSource.PROCESS_SCAN
    assert entry.base_url == f"http://127.0.0.1:{port}"
    assert entry.healthy and entry.status == "ready"
    assert "tiny-alias" in entry.model_ids
    assert entry.process_name == "llama-server" and entry.cmdline[0].endswith("llama-server")

    assert [e for e in find(exclude_pids={proc.pid}) if e.pid == proc.pid] == []
