"""The Ollama stand-in, run as a real process, speaks Ollama's documented API strictly."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.ollama import OllamaStandin, start_standin
from tests.processes import assert_nothing_left, free_port


def ndjson(client: httpx.Client, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    with client.stream("POST", path, json=body) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("application/x-ndjson")
        return [json.loads(line) for line in reply.iter_lines() if line]


def stopped_cleanly(standin: OllamaStandin) -> None:
    assert standin.stop() == 0, standin.log_text()
    assert_nothing_left(standin.proc.pid, standin.proc.pid)


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OllamaStandin]:
    proc = start_standin(tmp_path_factory.mktemp("ollama"), free_port())
    try:
        yield proc
    finally:
        stopped_cleanly(proc)


@pytest.fixture(scope="module")
def client(standin: OllamaStandin) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=standin.base_url, timeout=5.0) as http:
        yield http


@pytest.fixture(scope="module")
def tiny(client: httpx.Client) -> str:
    lines = ndjson(client, "/api/pull", {"model": "tiny"})
    assert lines[-1] == {"status": "success"}
    return "tiny:latest"


def test_liveness_and_version(client: httpx.Client) -> None:
    assert client.get("/").text == "Ollama is running"
    assert client.head("/").status_code == 200
    version = client.get("/api/version").json()["version"]
    assert version.startswith("0.") and len(version.split(".")) == 3


def test_pull_streams_growing_progress_then_success(client: httpx.Client) -> None:
    lines = ndjson(client, "/api/pull", {"model": "small:latest", "stream": True})
    assert lines[0] == {"status": "pulling manifest"}
    assert [x["status"] for x in lines[-3:]] == [
        "verifying sha256 digest",
        "writing manifest",
        "success",
    ]
    progress = [x for x in lines if x["status"].startswith("pulling ") and "digest" in x]
    weights = [x for x in progress if x["digest"] == progress[0]["digest"]]
    assert len(weights) >= 5
    assert "completed" not in weights[0]  # absent at first, as Ollama sends it
    completed = [x["completed"] for x in weights[1:]]
    assert completed == sorted(completed) and completed[-1] == weights[0]["total"]
    assert weights[0]["status"] == f"pulling {weights[0]['digest'][7:19]}"

    tags = {m["name"]: m for m in client.get("/api/tags").json()["models"]}
    small = tags["small:latest"]
    assert small["model"] == "small:latest" and len(small["digest"]) == 64
    assert small["size"] > 24 * 1024 and datetime.fromisoformat(small["modified_at"])
    assert small["details"] | {"family": "qwen2"} == small["details"]
    assert small["details"]["format"] == "gguf"
    assert small["details"]["parameter_size"] == "494.03M"
    assert small["details"]["quantization_level"] == "Q8_0"

    again = ndjson(client, "/api/pull", {"model": "small"})
    assert again[-1] == {"status": "success"}
    assert all(x["completed"] == x["total"] for x in again if "digest" in x)

    done = client.post("/api/pull", json={"model": "small", "stream": False})
    assert done.json() == {"status": "success"}


def test_pull_unknown_model_ends_with_an_error_line(client: httpx.Client) -> None:
    lines = ndjson(client, "/api/pull", {"model": "no-such-model"})
    assert lines[0] == {"status": "pulling manifest"}
    assert "error" in lines[-1] and len(lines) == 2
    assert client.post("/api/pull", json={"model": "nope", "stream": False}).status_code == 500


def test_show_reports_details_model_info_template_capabilities(
    client: httpx.Client, tiny: str
) -> None:
    shown = client.post("/api/show", json={"model": tiny}).json()
    info = shown["model_info"]
    assert info["general.architecture"] == "llama"
    assert info["general.parameter_count"] == 12_345_678
    for key in (
        "block_count",
        "context_length",
        "attention.head_count",
        "attention.head_count_kv",
        "embedding_length",
    ):
        assert isinstance(info[f"llama.{key}"], int)
    assert shown["details"]["quantization_level"] == "Q4_K_M"
    assert shown["template"] and shown["capabilities"] == ["completion"]


def test_load_with_keep_alive_then_unload(client: httpx.Client, tiny: str) -> None:
    loaded = client.post("/api/generate", json={"model": tiny, "keep_alive": "10m"}).json()
    assert loaded["done"] is True and loaded["done_reason"] == "load"
    assert loaded["response"] == ""
    (entry,) = [m for m in client.get("/api/ps").json()["models"] if m["name"] == tiny]
    left = datetime.fromisoformat(entry["expires_at"]) - datetime.now().astimezone()
    assert timedelta(minutes=9) < left <= timedelta(minutes=10)
    assert 0 < entry["size_vram"] <= entry["size"] and entry["context_length"] == 4096
    assert entry["details"]["family"] == "llama"

    client.post(
        "/api/generate", json={"model": tiny, "keep_alive": -1, "options": {"num_ctx": 8192}}
    )
    (entry,) = [m for m in client.get("/api/ps").json()["models"] if m["name"] == tiny]
    assert datetime.fromisoformat(entry["expires_at"]).year > 2200
    assert entry["context_length"] == 8192

    client.post("/api/generate", json={"model": tiny, "keep_alive": 30})
    (entry,) = [m for m in client.get("/api/ps").json()["models"] if m["name"] == tiny]
    left = datetime.fromisoformat(entry["expires_at"]) - datetime.now().astimezone()
    assert timedelta(seconds=25) < left <= timedelta(seconds=30)

    unloaded = client.post("/api/generate", json={"model": tiny, "keep_alive": 0}).json()
    assert unloaded["done_reason"] == "unload"
    assert tiny not in [m["name"] for m in client.get("/api/ps").json()["models"]]

    bad = client.post("/api/generate", json={"model": tiny, "keep_alive": "soon"})
    assert bad.status_code == 400 and "invalid duration" in bad.json()["error"]


def test_chat_streams_ndjson_whose_counts_add_up(client: httpx.Client, tiny: str) -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hello there friend"},
    ]
    chunks = ndjson(client, "/api/chat", {"model": tiny, "messages": messages})
    *parts, last = chunks
    assert all(c["done"] is False and c["message"]["role"] == "assistant" for c in parts)
    assert last["done"] is True and last["done_reason"] == "stop"
    assert last["eval_count"] == len(parts) > 1
    assert last["prompt_eval_count"] == (2 + 1) + (3 + 1)  # words, plus one per role
    assert last["eval_duration"] > 0 and last["prompt_eval_duration"] > 0
    assert last["eval_count"] / last["eval_duration"] * 1e9 == pytest.approx(50.0)
    assert "".join(c["message"]["content"] for c in parts).startswith("The quick brown")
    assert tiny in [m["name"] for m in client.get("/api/ps").json()["models"]]

    short = ndjson(
        client, "/api/chat", {"model": tiny, "messages": messages, "options": {"num_predict": 3}}
    )
    assert short[-1]["eval_count"] == 3 == len(short) - 1
    assert short[-1]["done_reason"] == "length"

    whole = client.post("/api/chat", json={"model": tiny, "messages": messages, "stream": False})
    assert whole.json()["message"]["content"] == "".join(c["message"]["content"] for c in parts)

    gen = ndjson(client, "/api/generate", {"model": tiny, "prompt": "say hi"})
    assert gen[-1]["eval_count"] == len(gen) - 1 and gen[-1]["prompt_eval_count"] == 3


def test_openai_chat_streams_sse_with_a_usage_chunk(client: httpx.Client, tiny: str) -> None:
    body = {
        "model": tiny,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 5,
    }
    with client.stream("POST", "/v1/chat/completions", json=body) as reply:
        assert reply.headers["content-type"].startswith("text/event-stream")
        events = [line.removeprefix("data: ") for line in reply.iter_lines() if line]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    usage_chunk = chunks[-1]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"] == {"prompt_tokens": 2, "completion_tokens": 5, "total_tokens": 7}
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    content = [c["choices"][0]["delta"]["content"] for c in chunks[:-2]]
    assert len(content) == 5 and all(c["object"] == "chat.completion.chunk" for c in chunks)

    body.pop("stream_options")
    with client.stream("POST", "/v1/chat/completions", json=body) as reply:
        events = [line for line in reply.iter_lines() if line]
    assert all("usage" not in e for e in events) and events[-1] == "data: [DONE]"

    whole = client.post("/v1/chat/completions", json=body | {"stream": False}).json()
    assert whole["object"] == "chat.completion" and whole["usage"]["total_tokens"] == 7
    assert whole["choices"][0]["message"]["content"] == "".join(content)

    models = client.get("/v1/models").json()
    assert models["object"] == "list" and tiny in [m["id"] for m in models["data"]]


def test_errors_are_answered_as_ollama_does(client: httpx.Client, tiny: str) -> None:
    msgs = [{"role": "user", "content": "hi"}]
    for method, path, body in (
        ("POST", "/api/show", {"model": "ghost"}),
        ("DELETE", "/api/delete", {"model": "ghost"}),
    ):
        reply = client.request(method, path, json=body)
        assert reply.status_code == 404
        assert reply.json() == {"error": "model 'ghost' not found"}
    missing = client.post("/api/chat", json={"model": "ghost", "messages": msgs})
    assert missing.status_code == 404 and "not found" in missing.json()["error"]
    v1 = client.post("/v1/chat/completions", json={"model": "ghost", "messages": msgs})
    assert v1.status_code == 404 and "not found" in v1.json()["error"]["message"]

    bad_bodies: list[dict[str, Any]] = [
        {"messages": msgs},
        {"model": 7, "messages": msgs},
        {"model": tiny, "messages": "hi"},
        {"model": tiny, "messages": [{"content": "no role"}]},
        {"model": tiny, "messages": msgs, "stream": "yes"},
        {"model": tiny, "messages": msgs, "options": {"num_predict": "3"}},
    ]
    for bad in bad_bodies:
        reply = client.post("/api/chat", json=bad)
        assert reply.status_code == 400, bad
        assert isinstance(reply.json()["error"], str)
    assert client.post("/api/chat", content=b"").json() == {"error": "missing request body"}
    assert client.post("/api/pull", json={}).json() == {"error": "model is required"}
    # Ollama ignores fields it does not know.
    ok = client.post("/api/chat", json={"model": tiny, "messages": msgs, "stream": False, "x": 1})
    assert ok.status_code == 200

    assert client.get("/api/nothing").status_code == 404
    assert client.get("/api/chat").status_code == 405


def test_embedding_model_refuses_chat_and_delete_removes_it(client: httpx.Client) -> None:
    ndjson(client, "/api/pull", {"model": "embed"})
    refused = client.post(
        "/api/chat", json={"model": "embed", "messages": [{"role": "user", "content": "hi"}]}
    )
    assert refused.status_code == 400 and "does not support" in refused.json()["error"]
    assert client.request("DELETE", "/api/delete", json={"model": "embed"}).status_code == 200
    assert "embed:latest" not in [m["name"] for m in client.get("/api/tags").json()["models"]]
    assert client.request("DELETE", "/api/delete", json={"model": "embed"}).status_code == 404


def test_failed_pull_resumes_where_it_stopped(tmp_path: Path) -> None:
    standin = start_standin(tmp_path, free_port(), "--fail-pull-after-bytes", "3000")
    try:
        with httpx.Client(base_url=standin.base_url, timeout=5.0) as client:
            first = ndjson(client, "/api/pull", {"model": "tiny"})
            assert first[-1] == {"error": "max retries exceeded: unexpected EOF"}
            assert max(x.get("completed", 0) for x in first) == 3000
            second = ndjson(client, "/api/pull", {"model": "tiny"})
            assert second[1]["completed"] == 3000  # resumed, not restarted
            assert "error" in second[-1]
            third = ndjson(client, "/api/pull", {"model": "tiny"})
            assert third[-1] == {"status": "success"}
            assert client.post("/api/show", json={"model": "tiny"}).status_code == 200
    finally:
        stopped_cleanly(standin)


def test_slow_start_answers_nothing_at_first(tmp_path: Path) -> None:
    started = time.monotonic()
    standin = start_standin(tmp_path, free_port(), "--slow-start", "1.0", wait=False)
    try:
        time.sleep(0.3)  # bound by now, but silent
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{standin.base_url}/", timeout=0.2)
        standin.wait_ready(timeout_s=5.0)
        assert time.monotonic() - started >= 1.0
    finally:
        stopped_cleanly(standin)


def test_crash_on_chat_kills_the_process_mid_stream(tmp_path: Path) -> None:
    standin = start_standin(tmp_path, free_port(), "--crash-on-chat")
    try:
        with httpx.Client(base_url=standin.base_url, timeout=5.0) as client:
            ndjson(client, "/api/pull", {"model": "tiny"})
            messages = [{"role": "user", "content": "hi"}]
            with pytest.raises(httpx.TransportError):
                ndjson(client, "/api/chat", {"model": "tiny", "messages": messages})
        assert standin.proc.wait(5) == 2
        assert "panic" in standin.log_text()
        assert_nothing_left(standin.proc.pid, standin.proc.pid)
    finally:
        standin.stop()


def test_ollama_host_env_binds_and_a_busy_port_is_refused(tmp_path: Path) -> None:
    port = free_port()
    env = {"OLLAMA_HOST": f"127.0.0.1:{port}"}
    standin = start_standin(tmp_path / "a", port, env=env, bind_flags=False)
    try:
        second = start_standin(tmp_path / "b", port, env=env, bind_flags=False, wait=False)
        assert second.proc.wait(5) == 1
        assert "address already in use" in second.log_text()
        assert httpx.get(f"{standin.base_url}/api/version").status_code == 200
    finally:
        stopped_cleanly(standin)
    assert (tmp_path / "a" / "registry" / "manifests").is_dir()
