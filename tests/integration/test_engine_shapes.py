"""The strict stand-in's reasoning and tool-call replies: the recorded fixtures are what it
sends, and it refuses what the engines refuse."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.ollama import REPO_ROOT
from tests.fakes.openai_engines import EngineStandin, start_standin
from tests.fixtures import engine_shapes as shapes
from tests.fixtures.engine_shapes.record import KEY, answers, fetch, free_port


@pytest.mark.parametrize("kind", shapes.KINDS)
@pytest.mark.parametrize("shape", shapes.SHAPES)
def test_the_fixtures_are_the_bytes_the_standin_sends(
    tmp_path: Path, shape: str, kind: str
) -> None:
    streamed, whole = answers(shape, kind, tmp_path)
    assert streamed == shapes.stream_bytes(shape, kind)
    assert whole == shapes.whole_bytes(shape, kind)


@pytest.mark.parametrize("shape", shapes.SHAPES)
def test_every_shape_streams_one_call_whose_pieces_make_the_arguments(shape: str) -> None:
    events = shapes.stream_events(shape, "reasoning_tool")
    deltas = [e["choices"][0]["delta"] for e in events if e["choices"]]
    calls = [c for d in deltas for c in d.get("tool_calls") or []]
    assert {c["index"] for c in calls} == {0}
    ids = [c.get("id") for c in calls if c.get("id")]
    assert len(ids) == 1 and calls[0].get("id") == ids[0]  # the id comes once, first
    assert calls[0]["function"]["name"] == shapes.TOOL_NAME
    arguments = "".join((c["function"].get("arguments") or "") for c in calls)
    assert json.loads(arguments) == shapes.ARGUMENTS
    field = "reasoning" if shape == "vllm" else "reasoning_content"
    assert "".join(d.get(field) or "" for d in deltas) == shapes.REASONING
    finishes = [e["choices"][0]["finish_reason"] for e in events if e["choices"]]
    assert finishes[-1] == "tool_calls" and not any(finishes[:-1])
    assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] > 0
    message = shapes.whole(shape, "reasoning_tool")["choices"][0]["message"]
    assert message[field] == shapes.REASONING
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == shapes.ARGUMENTS


def post(
    standin: EngineStandin, body: dict[str, object], key: str | None = KEY
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(standin.host, standin.port, timeout=10)
    try:
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        conn.request("POST", "/v1/chat/completions", json.dumps(body), headers)
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def test_vllm_without_a_parser_refuses_tools_as_vllm_does(tmp_path: Path) -> None:
    standin = start_standin("vllm", tmp_path, free_port(), "serve", shapes.MODEL, "--api-key", KEY)
    try:
        status, body = post(standin, shapes.request("tool", stream=False))
        assert status == 400
        error = json.loads(body)["error"]
        assert error["type"] == "BadRequestError" and error["code"] == 400
        assert "--enable-auto-tool-choice and --tool-call-parser" in error["message"]
        # tool_choice none needs no parser; without the key nothing is answered at all.
        assert (
            post(standin, shapes.request("tool", stream=False) | {"tool_choice": "none"})[0] == 200
        )
        assert post(standin, shapes.request("tool", stream=False), key=None)[0] == 401
    finally:
        standin.stop()


def test_sglang_without_a_parser_answers_the_call_as_text(tmp_path: Path) -> None:
    args = ("--model-path", shapes.MODEL, "--api-key", KEY)
    standin = start_standin("sglang", tmp_path, free_port(), *args)
    try:
        message = json.loads(fetch(standin, shapes.request("tool", stream=False)))["choices"][0]
        assert message["finish_reason"] == "stop"
        assert message["message"]["tool_calls"] is None
        assert message["message"]["content"].startswith("<tool_call>")
    finally:
        standin.stop()


@pytest.mark.parametrize(
    ("personality", "args"),
    [
        ("vllm", ["serve", "m", "--tool-call-parser", "qwen25"]),  # SGLang's name, not vLLM's
        ("sglang", ["--model-path", "m", "--reasoning-parser", "deepseek_r1"]),  # vLLM's
    ],
)
def test_a_parser_the_engine_does_not_register_ends_the_start(
    personality: str, args: list[str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.fakes.openai_engines", personality, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "invalid choice" in done.stderr


def _signature(event: dict[str, object]) -> tuple[object, ...]:
    """The keys, in order, at each level of a chunk or body: what a parser walks."""
    choices = event.get("choices") or []
    assert isinstance(choices, list)
    inner = [
        (tuple(c), tuple(c.get("delta") or c.get("message") or {}))
        for c in choices
        if isinstance(c, dict)
    ]
    usage = event.get("usage")
    timings = event.get("timings")
    return (
        tuple(event),
        tuple(inner),
        tuple(usage) if isinstance(usage, dict) else None,
        tuple(timings) if isinstance(timings, dict) else None,
    )


def _sse_events(data: bytes) -> list[dict[str, object]]:
    blocks = data.decode().split("\n\n")
    return [json.loads(b[6:]) for b in blocks if b.startswith("data: ") and b != "data: [DONE]"]


def test_the_llamacpp_shape_has_a_real_llama_servers_keys_in_its_order(
    tmp_path: Path, llama_server_binary: Path, tiny_gguf: Path
) -> None:
    # The real server's plain replies (the tiny model makes no calls) against the
    # stand-in's in the llama.cpp shape: same keys, same order, at every level.
    port = free_port()
    argv = [str(llama_server_binary), "-m", str(tiny_gguf), "--port", str(port), "-c", "512"]
    log = (tmp_path / "llama.log").open("wb")
    real = subprocess.Popen([*argv, "--jinja", "--api-key", KEY], stdout=log, stderr=log)
    standin = start_standin(
        "vllm", tmp_path, free_port(), "serve", "m", "--api-key", KEY, "--standin-shape", "llamacpp"
    )
    try:
        server = EngineStandin(real, "127.0.0.1", port, tmp_path, tmp_path / "llama.log")
        server.personality = "vllm"
        server.wait_ready(timeout_s=30)
        body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 12}
        for stream in (False, True):
            asked = body | {"stream": stream, "temperature": 0}
            if stream:
                asked["stream_options"] = {"include_usage": True}
            real_body = fetch(server, asked)
            ours = fetch(standin, asked | {"model": "m"})
            if stream:
                real_events, our_events = _sse_events(real_body), _sse_events(ours)
                assert real_body.endswith(b"data: [DONE]\n\n") and ours.endswith(
                    b"data: [DONE]\n\n"
                )
                assert _signature(real_events[0]) == _signature(our_events[0])
                assert _signature(real_events[1]) == _signature(our_events[1])
                assert [_signature(e) for e in real_events[-2:]] == [
                    _signature(e) for e in our_events[-2:]
                ]
            else:
                assert _signature(json.loads(real_body)) == _signature(json.loads(ours))
    finally:
        standin.stop()
        real.terminate()
        real.wait(timeout=10)
        log.close()
