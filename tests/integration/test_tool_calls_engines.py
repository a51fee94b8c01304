"""Tool calls through the gateway on every engine Roundhouse starts: the vLLM and SGLang
stand-ins get the parsers of a Qwen3 model from a real daemon, and the real llama-server
answers a request with tools."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from openai import OpenAI

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import StartRequest
from roundhouse.api.settings import EngineSettings, Settings
from tests.daemon_process import path_with, running_daemon, start_ready
from tests.fixtures import engine_shapes as shapes
from tests.fixtures.chat_templates import template, write_model
from tests.support.cli import roundhouse
from tests.support.standins import daemon_with, sglang_python, vllm_standin

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
# What the daemon must add for a Qwen3 model (resources/engines/tool_parsers.toml).
PARSER_ARGS = {
    EngineId.VLLM: ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"],
    EngineId.SGLANG: ["--tool-call-parser", "qwen25"],
}
REASONING_FIELD = {EngineId.VLLM: "reasoning", EngineId.SGLANG: "reasoning_content"}


def _contains(argv: list[str], part: list[str]) -> bool:
    return any(argv[i : i + len(part)] == part for i in range(len(argv)))


@pytest.mark.parametrize("engine", [EngineId.VLLM, EngineId.SGLANG])
def test_a_qwen3_model_gets_its_parsers_and_tool_calls_come_back_whole_and_streamed(
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
    options = InstanceOptions(model=str(folder), served_name="qwen3-tools")
    with daemon_with(work / "home", settings, dirs) as daemon:
        info = asyncio.run(start_ready(daemon, StartRequest(engine=engine, options=options)))
        assert _contains(info.argv, PARSER_ARGS[engine]), info.argv
        assert _contains(info.argv, ["--reasoning-parser", "qwen3"]), info.argv
        assert info.log_path is not None
        log = Path(info.log_path).read_text(encoding="utf-8")
        assert "[roundhouse] Tool calls and reasoning: the model is qwen3" in log

        client = OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        whole = client.chat.completions.create(
            model="qwen3-tools",
            messages=MESSAGES,  # type: ignore[arg-type]
            tools=shapes.TOOLS,  # type: ignore[arg-type]
        )
        choice = whole.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert choice.message.tool_calls is not None
        (call,) = choice.message.tool_calls
        assert call.function.name == shapes.TOOL_NAME  # type: ignore[union-attr]
        assert json.loads(call.function.arguments) == shapes.ARGUMENTS  # type: ignore[union-attr]
        extra = choice.message.model_extra or {}
        assert extra[REASONING_FIELD[engine]] == shapes.REASONING

        stream = client.chat.completions.create(
            model="qwen3-tools",
            messages=MESSAGES,  # type: ignore[arg-type]
            tools=shapes.TOOLS,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        ids, names, arguments, reasoning, finishes, usage = [], [], "", "", [], None
        for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            for streamed in chunk.choices:
                finishes.append(streamed.finish_reason)
                reasoning += (streamed.delta.model_extra or {}).get(REASONING_FIELD[engine]) or ""
                for delta in streamed.delta.tool_calls or []:
                    assert delta.index == 0
                    ids += [delta.id] if delta.id else []
                    if delta.function and delta.function.name:
                        names.append(delta.function.name)
                    if delta.function and delta.function.arguments:
                        arguments += delta.function.arguments
        assert len(ids) == 1 and names == [shapes.TOOL_NAME]
        assert json.loads(arguments) == shapes.ARGUMENTS
        assert reasoning == shapes.REASONING
        assert finishes[-1] == "tool_calls"
        assert usage is not None and usage.completion_tokens > 0


def test_the_parsers_can_be_turned_off_and_then_vllm_refuses_tools(tmp_path: Path) -> None:
    folder = write_model(tmp_path / "models" / "Qwen3-8B", "qwen3")
    work = tmp_path / "work"
    vllm_standin(work / "bin")
    options = InstanceOptions(
        model=str(folder), served_name="plain", tool_parser="none", reasoning_parser="none"
    )
    settings = Settings(models_dir=str(work / "hub"))
    with daemon_with(work / "home", settings, [work / "bin"]) as daemon:
        info = asyncio.run(start_ready(daemon, StartRequest(engine=EngineId.VLLM, options=options)))
        assert not {"--tool-call-parser", "--reasoning-parser"} & set(info.argv)
        client = OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        with pytest.raises(Exception) as refused:
            client.chat.completions.create(
                model="plain",
                messages=MESSAGES,  # type: ignore[arg-type]
                tools=shapes.TOOLS,  # type: ignore[arg-type]
            )
        assert getattr(refused.value, "status_code", None) == 400
        assert "--enable-auto-tool-choice" in str(refused.value)


def test_llama_server_answers_tools_through_its_jinja_template(
    tmp_path: Path, llama_server_binary: Path, tiny_gguf: Path
) -> None:
    options = InstanceOptions(model=str(tiny_gguf), ctx_size=1024, served_name="tiny-tools")
    with running_daemon(tmp_path / "home", env=path_with(llama_server_binary)) as daemon:
        info = asyncio.run(
            start_ready(daemon, StartRequest(engine=EngineId.LLAMA_CPP, options=options))
        )
        # Tools need the Jinja template; reasoning goes to reasoning_content by default.
        assert "--jinja" in info.argv
        assert "--reasoning-format" not in info.argv
        assert info.log_path is not None
        assert "reasoning_content" in Path(info.log_path).read_text(encoding="utf-8")
        client = OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        for tool_choice in ("auto", "required"):
            whole = client.chat.completions.create(
                model="tiny-tools",
                messages=MESSAGES,  # type: ignore[arg-type]
                tools=shapes.TOOLS,  # type: ignore[arg-type]
                tool_choice=tool_choice,  # type: ignore[arg-type]
                max_tokens=48,
                temperature=0,
            )
            choice = whole.choices[0]
            # The tiny model writes nonsense; the reply is still a well-formed completion,
            # and any call it makes names a tool that was offered.
            assert choice.finish_reason in ("stop", "length", "tool_calls")
            for call in choice.message.tool_calls or []:
                assert call.function.name == shapes.TOOL_NAME  # type: ignore[union-attr]
            assert whole.usage is not None and whole.usage.completion_tokens > 0
        stream = client.chat.completions.create(
            model="tiny-tools",
            messages=MESSAGES,  # type: ignore[arg-type]
            tools=shapes.TOOLS,  # type: ignore[arg-type]
            max_tokens=24,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        assert chunks[-1].usage is not None
        finishes = [c.finish_reason for ch in chunks for c in ch.choices if c.finish_reason]
        assert len(finishes) == 1


def test_the_cli_chooses_llama_servers_reasoning_format_and_refuses_a_tool_parser(
    tmp_path: Path, llama_server_binary: Path, tiny_gguf: Path
) -> None:
    with running_daemon(tmp_path / "home", env=path_with(llama_server_binary)) as daemon:

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return roundhouse(daemon, "engines", *args)

        model = ("-m", str(tiny_gguf), "-c", "512")
        refused = cli("start", "llama.cpp", *model, "--tool-parser", "hermes")
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert "Jinja chat template" in refused.stderr
        wrong = cli("start", "llama.cpp", *model, "--reasoning-parser", "qwen3")
        assert wrong.returncode == 1 and "deepseek" in wrong.stderr
        started = cli("start", "llama.cpp", *model, "--reasoning-parser", "none", "--json")
        assert started.returncode == 0, started.stderr
        argv = json.loads(started.stdout)["argv"]
        assert argv[argv.index("--reasoning-format") + 1] == "none"
        assert cli("stop", "--all").returncode == 0


def test_mlx_takes_tools_with_a_tool_calling_template(
    tmp_path: Path, mlx_python: str, tiny_hf_model: Path
) -> None:
    # mlx_lm.server picks its tool parser from the chat template: the tiny model given
    # Qwen2.5's (Hermes <tool_call>) template has one; its output is nonsense, the request
    # and the reply are still well formed.
    folder = tmp_path / "tiny-tools"
    shutil.copytree(tiny_hf_model, folder)
    tokenizer_config = folder / "tokenizer_config.json"
    config = json.loads(tokenizer_config.read_text(encoding="utf-8"))
    config["chat_template"] = template("qwen2.5")
    tokenizer_config.write_text(json.dumps(config), encoding="utf-8")
    settings = Settings(
        models_dir=str(tmp_path / "hub"), engines=EngineSettings(python_paths=[mlx_python])
    )
    (tmp_path / "hub").mkdir()
    options = InstanceOptions(model=str(folder))
    with daemon_with(tmp_path / "home", settings, []) as daemon:
        info = asyncio.run(
            start_ready(daemon, StartRequest(engine=EngineId.MLX, options=options), 120)
        )
        assert not {"--tool-call-parser", "--reasoning-parser"} & set(info.argv)
        client = OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        for stream in (False, True):
            reply = client.chat.completions.create(
                model=info.models[0],
                messages=MESSAGES,  # type: ignore[arg-type]
                tools=shapes.TOOLS,  # type: ignore[arg-type]
                max_tokens=16,
                temperature=0,
                stream=stream,
            )
            if stream:
                chunks = list(reply)  # type: ignore[arg-type]
                assert any(c.choices and c.choices[0].finish_reason for c in chunks)
            else:
                assert reply.choices[0].finish_reason in ("stop", "length", "tool_calls")  # type: ignore[union-attr]
        assert info.log_path is not None
        # What mlx_lm.server logs when a model's template gives it no tool parser.
        assert "does not support tool calling" not in Path(info.log_path).read_text("utf-8")
