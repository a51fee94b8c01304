"""A real llama.cpp llama-server on a tiny generated model: the API Roundhouse relies on."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0


@dataclass
class RunningServer:
    proc: subprocess.Popen[bytes]
    http: httpx.Client
    log_path: Path

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_server(binary: Path, model: Path, log_path: Path) -> RunningServer:
    """Spawn llama-server in its own process group and wait until /health says 200."""
    port = free_port()
    args = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port)]
    args += ["-c", "512", "--metrics", "-np", "1"]
    # A file, not a pipe: nobody reads the output while the test runs, and a full pipe
    # would stall the server.
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    # trust_env=False: a CI proxy in HTTP(S)_PROXY must never see loopback traffic.
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", trust_env=False, timeout=30)
    server = RunningServer(proc, http, log_path)
    deadline = time.monotonic() + READY_TIMEOUT_S
    last = "no answer"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama-server exited with {proc.returncode}:\n{server.log_tail()}")
        try:
            response = http.get("/health", timeout=2.0)
        except httpx.TransportError as exc:
            last = repr(exc)
        else:
            if response.status_code == 200:
                return server
            last = f"{response.status_code} {response.text[:200]}"
        time.sleep(0.05)
    stop(server)
    pytest.fail(f"llama-server not healthy in {READY_TIMEOUT_S} s ({last}):\n{server.log_tail()}")


def stop(server: RunningServer) -> None:
    """Last-resort cleanup: SIGKILL the whole group so no test leaves a server behind."""
    server.http.close()
    if server.proc.poll() is None:
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def server(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    running = start_server(llama_server_binary, tiny_gguf, log_path)
    try:
        yield running
    finally:
        stop(running)


def chat_body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "tiny",
        "messages": [{"role": "user", "content": "Say hello to the world."}],
        "temperature": 0,
        "max_tokens": 16,
        **extra,
    }


def test_models_lists_the_loaded_model(server: RunningServer, tiny_gguf: Path) -> None:
    response = server.http.get("/v1/models")
    assert response.status_code == 200
    models = response.json()["data"]
    assert len(models) == 1
    # The id is the path as given (or --alias); compare by name to stay robust to that.
    assert Path(models[0]["id"]).name == tiny_gguf.name
    assert models[0]["meta"]["n_vocab"] == 302


def test_chat_completion_returns_content_and_usage(server: RunningServer) -> None:
    response = server.http.post("/v1/chat/completions", json=chat_body(stream=False))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["choices"][0]["message"]["content"]
    assert body["usage"]["completion_tokens"] > 0
    # The tiny model never emits an end token, so every reply runs to max_tokens.
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 16
    assert body["usage"]["prompt_tokens"] > 0
    timings = body.get("timings", {})
    print(f"tiny model: {timings.get('predicted_per_second', 0):.0f} tokens/s generated")

    # Temperature 0 on a fixed-seed model: the same request gives the same text.
    again = server.http.post("/v1/chat/completions", json=chat_body(stream=False))
    content = body["choices"][0]["message"]["content"]
    assert again.json()["choices"][0]["message"]["content"] == content


def test_streaming_sends_chunks_usage_and_done(server: RunningServer) -> None:
    body = chat_body(stream=True, stream_options={"include_usage": True})
    events: list[str] = []
    # llama-server sometimes drops a kept-alive connection right after a streamed reply
    # (about 1 in 50 here) and the next request on it fails with "Server disconnected";
    # a connection of its own keeps that out of the other tests.
    with (
        httpx.Client(base_url=server.http.base_url, trust_env=False, timeout=30) as http,
        http.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [
            line.removeprefix("data: ")
            for line in response.iter_lines()
            if line.startswith("data:")
        ]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    text = "".join(
        choice["delta"].get("content") or "" for chunk in chunks for choice in chunk["choices"]
    )
    assert text
    usage_chunks = [chunk for chunk in chunks if chunk["choices"] == []]
    assert len(usage_chunks) == 1
    assert usage_chunks[0]["usage"]["completion_tokens"] > 0


def test_metrics_counts_predicted_tokens(server: RunningServer) -> None:
    # Make sure at least one generation happened whatever order the tests run in.
    server.http.post("/v1/chat/completions", json=chat_body())
    response = server.http.get("/metrics")
    assert response.status_code == 200
    assert "llamacpp:tokens_predicted_total" in response.text


def test_sigterm_stops_it_promptly_and_completely(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path: Path
) -> None:
    running = start_server(llama_server_binary, tiny_gguf, tmp_path / "server.log")
    proc = running.proc
    try:
        tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        os.killpg(proc.pid, signal.SIGTERM)
        started = time.monotonic()
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"llama-server ignored SIGTERM for {STOP_TIMEOUT_S} s")
        took = time.monotonic() - started
        print(f"llama-server exited {proc.returncode} {took:.2f} s after SIGTERM")
        _gone, alive = psutil.wait_procs(tree, timeout=2)
        assert alive == [], f"left behind: {alive}"
        assert not any(_in_group(p, proc.pid) for p in psutil.process_iter())
    finally:
        stop(running)


def _in_group(process: psutil.Process, pgid: int) -> bool:
    try:
        return os.getpgid(process.pid) == pgid
    except (ProcessLookupError, PermissionError):
        return False
