"""A tool round trip in Anthropic's API on the engines whose tool calls and reasoning come
from their parsers: the vLLM and SGLang stand-ins (real processes, each engine's bytes),
started by a real daemon for a Qwen3 model. They serve no /v1/messages, as releases before
the catalog's do: the gateway meets the 404, translates from then on, and the official
client gets thinking and tool_use blocks, streamed and whole."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import StartRequest
from roundhouse.api.settings import EngineSettings, Settings
from tests.anthropic_stream import check_stream, parse_sse
from tests.daemon_process import start_ready
from tests.fixtures import engine_shapes as shapes
from tests.fixtures.chat_templates import write_model
from tests.support.standins import daemon_with, sglang_python, vllm_standin

MODEL = "qwen3-tools"
QUESTION = "What is the weather in Paris?"
TOOLS: list[anthropic.types.ToolParam] = [
    {
        "name": t["function"]["name"],
        "description": t["function"]["description"],
        "input_schema": t["function"]["parameters"],
    }
    for t in shapes.TOOLS
]


@pytest.mark.parametrize("engine", [EngineId.VLLM, EngineId.SGLANG])
def test_a_tool_round_trip_with_thinking_through_each_engines_parsers(
    tmp_path: Path, engine: EngineId
) -> None:
    folder = write_model(tmp_path / "models" / "Qwen3-8B", "qwen3")
    work = tmp_path / "work"
    settings = Settings(models_dir=str(work / "hub"))
    if engine == EngineId.VLLM:
        vllm_standin(work / "bin")
        dirs = [work / "bin"]
    else:
        python = sglang_python(work)
        settings = settings.model_copy(update={"engines": EngineSettings(python_paths=[python])})
        dirs = []
    record = tmp_path / "received.jsonl"
    options = InstanceOptions(
        model=str(folder), served_name=MODEL, extra_args=("--record-requests", str(record))
    )
    with daemon_with(work / "home", settings, dirs) as daemon:
        info = asyncio.run(start_ready(daemon, StartRequest(engine=engine, options=options)))
        client = anthropic.Anthropic(
            base_url=daemon.url, api_key="unused", max_retries=0, timeout=60
        )
        raw = client.messages.with_raw_response.create(
            model=MODEL,
            max_tokens=200,
            messages=[{"role": "user", "content": QUESTION}],
            tools=TOOLS,
        )
        assert raw.headers["x-roundhouse-path"] == "translated"
        first = raw.parse()
        assert [b.type for b in first.content] == ["thinking", "tool_use"], first
        assert first.content[0].thinking == shapes.REASONING  # type: ignore[union-attr]
        use = first.content[1]
        assert use.type == "tool_use"
        assert (use.name, use.input) == (shapes.TOOL_NAME, shapes.ARGUMENTS)
        assert first.stop_reason == "tool_use" and first.usage.output_tokens > 0

        # The call and its result go back; the engine gets them as chat's tool messages.
        second = client.messages.create(
            model=MODEL,
            max_tokens=50,
            messages=[
                {"role": "user", "content": QUESTION},
                {"role": "assistant", "content": first.content},  # type: ignore[typeddict-item]
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": use.id, "content": "Sunny, 21 C"}
                    ],
                },
            ],
        )
        assert second.content and second.stop_reason in ("end_turn", "max_tokens")
        received = _last_chat_body(record)
        assert received["messages"][1]["tool_calls"][0]["id"] == use.id
        assert received["messages"][2] == {
            "role": "tool",
            "tool_call_id": use.id,
            "content": "Sunny, 21 C",
        }

        # Streamed: a valid sequence the SDK rebuilds into the same blocks.
        body: dict[str, Any] = {
            "model": MODEL,
            "max_tokens": 200,
            "messages": [{"role": "user", "content": QUESTION}],
            "tools": TOOLS,
            "stream": True,
        }
        reply = httpx.post(daemon.url + "/v1/messages", json=body, trust_env=False, timeout=60)
        assert reply.status_code == 200, reply.text
        streamed = check_stream(parse_sse(reply.content))
        assert [b["type"] for b in streamed["content"]] == ["thinking", "tool_use"]
        assert streamed["content"][1]["input"] == shapes.ARGUMENTS
        with client.messages.stream(
            model=MODEL,
            max_tokens=200,
            messages=[{"role": "user", "content": QUESTION}],
            tools=TOOLS,
        ) as stream:
            final = stream.get_final_message()
        assert final.content[1].input == shapes.ARGUMENTS  # type: ignore[union-attr]
        assert final.stop_reason == "tool_use"

        counted = client.messages.count_tokens(
            model=MODEL, messages=[{"role": "user", "content": QUESTION}], tools=TOOLS
        )
        assert counted.input_tokens > 0
        usage = httpx.get(
            daemon.url + "/api/v1/gateway/usage",
            headers={"Authorization": f"Bearer {daemon.token}"},
            trust_env=False,
        ).json()["usage"]
        (mine,) = [u for u in usage if u["instance"] == info.id]
        assert mine["by_api"].get("anthropic/translated") == 4, mine["by_api"]
        assert mine["by_api"].get("anthropic-count/translated") == 1, mine["by_api"]
        assert "anthropic/passthrough" not in mine["by_api"]
        # The catalog's word was tried once per API; the 404 settled it for this process.
        paths = [json.loads(line).get("path") for line in record.read_text("utf-8").splitlines()]
        assert paths.count("/v1/messages") == 1, paths
        assert paths.count("/v1/messages/count_tokens") == 1, paths


def _last_chat_body(record: Path) -> dict[str, Any]:
    """The last chat completions request the stand-in received."""
    entries = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    bodies = [e["body"] for e in entries if e.get("path") == "/v1/chat/completions"]
    assert bodies, entries
    body: dict[str, Any] = json.loads(bodies[-1])
    return body
