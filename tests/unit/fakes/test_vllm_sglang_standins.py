"""The vLLM and SGLang stand-ins, run as real processes, speak their engines' APIs strictly."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.ollama import REPO_ROOT
from tests.fakes.openai_engines import EngineStandin, start_standin
from tests.processes import assert_nothing_left, free_port

KEY = "sk-standin-test"
AUTH = {"Authorization": f"Bearer {KEY}"}
USER = [{"role": "user", "content": "hello there friend"}]  # 3 words + 1 for the role


def stopped_cleanly(standin: EngineStandin) -> None:
    started = time.monotonic()
    assert standin.stop() == 0, standin.log_text()
    assert time.monotonic() - started < 2.0
    assert_nothing_left(standin.proc.pid, standin.proc.pid)


def sse(client: httpx.Client, path: str, body: dict[str, Any], **kw: Any) -> list[str]:
    with client.stream("POST", path, json=body, **kw) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        assert reply.headers["transfer-encoding"] == "chunked"
        lines = [line for line in reply.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines)
    return [line.removeprefix("data: ") for line in lines]


def metric(text: str, name: str, labels: str = "") -> float:
    """One sample's value from Prometheus text; `labels` must appear in its label set."""
    for line in text.splitlines():
        match = re.match(r"^([\w:]+)\{([^}]*)\} (\S+)$", line)
        if match and match[1] == name and labels in match[2]:
            return float(match[3])
    raise AssertionError(f"{name}{{{labels}}} not in metrics")


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineStandin]:
    standin = start_standin(
        "vllm",
        tmp_path_factory.mktemp("vllm"),
        free_port(),
        "serve",
        "org/Tiny-Chat",
        "--served-model-name",
        "tiny",
        "-tp",
        "1",
        "--gpu-memory-utilization",
        "0.9",
        "--max-model-len",
        "64",
        "--dtype",
        "auto",
        "--kv-cache-dtype",
        "fp8",
        "--max-num-seqs",
        "4",
        "--load-seconds",
        "0.1",
        env={"VLLM_API_KEY": KEY},
    )
    try:
        yield standin
    finally:
        stopped_cleanly(standin)


@pytest.fixture(scope="module")
def client(vllm: EngineStandin) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=vllm.base_url, timeout=5.0, headers=AUTH) as http:
        yield http


def test_vllm_refuses_connections_while_loading_then_dies(tmp_path: Path) -> None:
    args = ("serve", "m", "--load-seconds", "0.8", "--die-after", "0.4")
    standin = start_standin("vllm", tmp_path, free_port(), *args, wait=False)
    try:
        time.sleep(0.3)
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{standin.base_url}/health", timeout=0.5)
        standin.wait_ready(timeout_s=5.0)
        assert httpx.get(f"{standin.base_url}/health").status_code == 200
        time.sleep(0.5)
        assert httpx.get(f"{standin.base_url}/health").status_code == 503
        body = {"model": "m", "messages": USER}
        dead = httpx.post(f"{standin.base_url}/v1/chat/completions", json=body)
        assert dead.status_code == 500 and dead.json()["error"]["code"] == 500
        assert "EngineDeadError" in standin.log_text()
    finally:
        stopped_cleanly(standin)


def test_vllm_api_key_guards_v1_only(vllm: EngineStandin) -> None:
    url = vllm.base_url
    assert httpx.get(f"{url}/health").status_code == 200
    assert httpx.get(f"{url}/metrics").status_code == 200
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}):
        refused = httpx.get(f"{url}/v1/models", headers=headers)
        assert refused.status_code == 401 and refused.json() == {"error": "Unauthorized"}
    post = httpx.post(f"{url}/v1/chat/completions", json={"model": "tiny", "messages": USER})
    assert post.status_code == 401
    models = httpx.get(f"{url}/v1/models", headers=AUTH).json()
    assert models["object"] == "list"
    (entry,) = models["data"]
    assert entry["id"] == "tiny" and entry["root"] == "org/Tiny-Chat"
    assert entry["owned_by"] == "vllm" and entry["max_model_len"] == 64


def test_vllm_chat_streams_sse_with_usage_then_done(client: httpx.Client) -> None:
    body = {
        "model": "tiny",
        "messages": USER,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 5,
    }
    events = sse(client, "/v1/chat/completions", body)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "tiny" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    *tokens, usage = chunks[1:]
    assert usage["choices"] == [] and usage["usage"] == {
        "prompt_tokens": 4,
        "total_tokens": 9,
        "completion_tokens": 5,
        "prompt_tokens_details": None,
    }
    assert all(c["usage"] is None for c in chunks[:-1])
    text = "".join(c["choices"][0]["delta"]["content"] for c in tokens)
    assert text == "The quick brown fox jumps" and len(tokens) == 5
    assert [c["choices"][0]["finish_reason"] for c in tokens] == [None] * 4 + ["length"]

    body.pop("stream_options")
    plain = sse(client, "/v1/chat/completions", body)
    assert plain[-1] == "[DONE]" and all('"usage"' not in e for e in plain)

    stray = client.post("/v1/chat/completions", json=body | {"stream": False, "stream_options": {}})
    assert stray.status_code == 400


def test_vllm_non_stream_chat_and_completions(client: httpx.Client) -> None:
    whole = client.post("/v1/chat/completions", json={"model": "tiny", "messages": USER})
    reply = whole.json()
    assert whole.status_code == 200 and reply["object"] == "chat.completion"
    (choice,) = reply["choices"]
    assert choice["finish_reason"] == "stop" and choice["message"]["role"] == "assistant"
    assert len(choice["message"]["content"].split()) == 12 == reply["usage"]["completion_tokens"]
    assert reply["usage"]["total_tokens"] == 16

    again = client.post("/v1/chat/completions", json={"messages": USER}).json()  # model optional
    assert again["choices"][0]["message"]["content"] == choice["message"]["content"]

    done = client.post("/v1/completions", json={"model": "tiny", "prompt": "a b", "max_tokens": 2})
    assert done.json()["object"] == "text_completion"
    assert done.json()["choices"][0]["text"] == "The quick"
    assert done.json()["usage"] == {
        "prompt_tokens": 2,
        "total_tokens": 4,
        "completion_tokens": 2,
        "prompt_tokens_details": None,
    }
    body = {"model": "tiny", "prompt": [1, 2, 3], "stream": True, "max_tokens": 2}
    events = sse(client, "/v1/completions", body)
    assert [json.loads(e)["choices"][0]["text"] for e in events[:-1]] == ["The", " quick"]


def test_vllm_errors_are_openai_shaped(client: httpx.Client) -> None:
    missing = client.post("/v1/chat/completions", json={"model": "ghost", "messages": USER})
    assert missing.status_code == 404
    assert missing.json() == {
        "error": {
            "message": "The model `ghost` does not exist.",
            "type": "NotFoundError",
            "param": "model",
            "code": 404,
        }
    }
    bad_bodies: list[dict[str, Any]] = [
        {"model": "tiny", "messages": []},
        {"model": "tiny", "messages": [{"content": "no role"}]},
        {"model": "tiny", "messages": USER, "stream": "yes"},
        {"model": "tiny", "messages": USER, "max_tokens": 0},
        {"model": "tiny", "messages": USER, "max_tokens": 61},  # 4 + 61 > 64
    ]
    for bad in bad_bodies:
        reply = client.post("/v1/chat/completions", json=bad)
        assert reply.status_code == 400, bad
        assert set(reply.json()["error"]) == {"message", "type", "param", "code"}
    assert "maximum context length is 64" in reply.json()["error"]["message"]
    assert client.post("/v1/chat/completions", content=b"{").status_code == 400
    assert client.get("/v1/nothing").status_code == 404
    assert client.get("/v1/chat/completions").status_code == 405


def test_vllm_metrics_add_up_to_what_was_served(vllm: EngineStandin) -> None:
    metrics = httpx.get(f"{vllm.base_url}/metrics")
    assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = metrics.text
    assert "# TYPE vllm:generation_tokens counter" in text
    label = 'model_name="tiny"'
    before = {
        name: metric(text, name, label)
        for name in (
            "vllm:prompt_tokens_total",
            "vllm:generation_tokens_total",
            "vllm:e2e_request_latency_seconds_count",
            "vllm:time_to_first_token_seconds_count",
            "vllm:inter_token_latency_seconds_count",
        )
    }
    served = [3, 12, 1]  # max_tokens of each request (12 = the natural length)
    with httpx.Client(base_url=vllm.base_url, headers=AUTH, timeout=5.0) as http:
        for n in served:
            body = {"model": "tiny", "messages": USER, "max_tokens": n}
            assert http.post("/v1/chat/completions", json=body).json()["usage"][
                "completion_tokens"
            ] == min(n, 12)
    after = httpx.get(f"{vllm.base_url}/metrics").text
    delta = {name: metric(after, name, label) - value for name, value in before.items()}
    assert delta["vllm:prompt_tokens_total"] == 4 * len(served)
    assert delta["vllm:generation_tokens_total"] == sum(served)
    assert delta["vllm:e2e_request_latency_seconds_count"] == len(served)
    assert delta["vllm:time_to_first_token_seconds_count"] == len(served)
    assert delta["vllm:inter_token_latency_seconds_count"] == sum(served) - len(served)
    bucket = 'le="+Inf"'
    assert metric(after, "vllm:e2e_request_latency_seconds_bucket", bucket) == metric(
        after, "vllm:e2e_request_latency_seconds_count"
    )
    for gauge in ("vllm:num_requests_running", "vllm:num_requests_waiting"):
        assert metric(after, gauge, label) == 0.0
    assert metric(after, "vllm:kv_cache_usage_perc", label) == 0.0
    assert metric(after, "vllm:gpu_cache_usage_perc", label) == 0.0
    assert metric(after, "vllm:request_success_total", 'finished_reason="length"') >= 2


def test_vllm_running_and_waiting_gauges_during_slow_streams(tmp_path: Path) -> None:
    args = ("--model", "m", "--max-num-seqs", "1", "--token-delay", "0.1", "--load-seconds", "0")
    standin = start_standin("vllm", tmp_path, free_port(), *args)
    try:
        body = {"model": "m", "messages": USER, "stream": True, "max_tokens": 4}

        def stream() -> None:
            with httpx.Client(base_url=standin.base_url, timeout=5.0) as http:
                sse(http, "/v1/chat/completions", body)

        threads = [threading.Thread(target=stream) for _ in range(2)]
        for thread in threads:
            thread.start()
        time.sleep(0.2)
        text = httpx.get(f"{standin.base_url}/metrics").text
        assert metric(text, "vllm:num_requests_running") == 1.0
        assert metric(text, "vllm:num_requests_waiting") == 1.0
        assert metric(text, "vllm:kv_cache_usage_perc") > 0.0
        for thread in threads:
            thread.join(5)
        text = httpx.get(f"{standin.base_url}/metrics").text
        assert metric(text, "vllm:generation_tokens_total") == 8.0
        assert metric(text, "vllm:num_requests_running") == 0.0
    finally:
        stopped_cleanly(standin)


def test_sglang_health_vs_health_generate_and_the_wedge(tmp_path: Path) -> None:
    args = (
        "--model-path",
        "org/Tiny-Chat",
        "--tp",
        "1",
        "--mem-fraction-static",
        "0.8",
        "--context-length",
        "64",
        "--max-running-requests",
        "4",
        "--enable-metrics",
        "--load-seconds",
        "0.6",
        "--wedge-after",
        "1.2",
        "--wedge-timeout",
        "0.3",
    )
    standin = start_standin("sglang", tmp_path, free_port(), *args, wait=False)
    try:
        standin.wait_ready(timeout_s=5.0, path="/health")  # bound at once
        url = standin.base_url
        assert httpx.get(f"{url}/health_generate").status_code == 503  # still loading
        standin.wait_ready(timeout_s=5.0)
        ready = time.monotonic()
        assert httpx.get(f"{url}/health_generate").status_code == 200
        info = httpx.get(f"{url}/get_model_info").json()
        assert info["model_path"] == "org/Tiny-Chat" and info["is_generation"] is True
        server = httpx.get(f"{url}/get_server_info").json()
        assert server["context_length"] == 64 and "version" in server

        with httpx.Client(base_url=url, timeout=5.0) as http:
            assert http.get("/v1/models").json()["data"][0]["owned_by"] == "sglang"
            body = {
                "model": "org/Tiny-Chat",
                "messages": USER,
                "stream": True,
                "stream_options": {"include_usage": True},
                "max_tokens": 4,
            }
            events = sse(http, "/v1/chat/completions", body)
            assert events[-1] == "[DONE]"
            usage = json.loads(events[-2])
            assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 4
            body.pop("stream_options")
            whole = http.post("/v1/chat/completions", json=body | {"stream": False})
            assert whole.json()["usage"]["prompt_tokens"] == 4
            missing = http.post("/v1/chat/completions", json={"model": "x", "messages": USER})
            assert missing.status_code == 404 and missing.json()["error"]["code"] == 404

            text = http.get("/metrics").text
            label = 'model_name="org/Tiny-Chat"'
            # Each chat: 4 prompt and 4 reply tokens; each /health_generate: 1 and 1.
            generated = metric(text, "sglang:generation_tokens_total", label)
            assert generated == metric(text, "sglang:prompt_tokens_total", label) >= 8 + 2
            assert metric(text, "sglang:num_running_reqs") == 0.0
            assert metric(text, "sglang:num_queue_reqs") == 0.0
            assert metric(text, "sglang:token_usage") == 0.0
            assert 0.0 < metric(text, "sglang:cache_hit_rate") < 1.0  # second prompt was cached
            assert metric(text, "sglang:gen_throughput") > 0.0

        time.sleep(max(0.0, ready + 1.3 - time.monotonic()))
        assert httpx.get(f"{url}/health").status_code == 200  # the documented trap
        started = time.monotonic()
        assert httpx.get(f"{url}/health_generate", timeout=5.0).status_code == 503
        assert time.monotonic() - started >= 0.25  # it hung first
        with pytest.raises(httpx.ReadTimeout):
            httpx.get(f"{url}/health_generate", timeout=0.1)
    finally:
        stopped_cleanly(standin)


def test_sglang_metrics_need_the_flag(tmp_path: Path) -> None:
    args = ("--model-path", "m", "--load-seconds", "0", "--served-model-name", "alias")
    standin = start_standin("sglang", tmp_path, free_port(), *args)
    try:
        reply = httpx.get(f"{standin.base_url}/metrics")
        assert reply.status_code == 404 and reply.json() == {"detail": "Not Found"}
        models = httpx.get(f"{standin.base_url}/v1/models").json()
        assert [m["id"] for m in models["data"]] == ["alias"]
    finally:
        stopped_cleanly(standin)


@pytest.mark.parametrize(
    "argv",
    [
        ["vllm", "serve", "m", "--port", "1", "--no-such-flag"],
        ["vllm", "serve", "m", "--max-model"],  # no abbreviations
        ["vllm", "serve"],  # no model
        ["sglang", "--model-path", "m", "--bogus", "1"],
        ["sglang", "--port", "1"],  # --model-path is required
        ["llamacpp"],
    ],
)
def test_bad_command_lines_exit_2(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.fakes.openai_engines", *argv],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert done.returncode == 2, done.stderr
    assert "error" in done.stderr


def test_sigterm_while_loading_exits_0_at_once(tmp_path: Path) -> None:
    standin = start_standin(
        "vllm", tmp_path, free_port(), "serve", "m", "--load-seconds", "30", wait=False
    )
    time.sleep(0.3)
    stopped_cleanly(standin)
