"""`roundhouse chat` through a real daemon and the real llama-server on the tiny GGUF: replies
stream and are saved with their figures, stdin and --json, an interactive chat on a terminal,
clear errors, and a reply stopped mid-stream (the turn itself: test_chat_turns.py)."""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from roundhouse.client import DaemonClient
from tests.daemon_process import DaemonProcess, path_with, start_daemon
from tests.fakes.launchers import start_vllm_serve
from tests.processes import free_port
from tests.support import cli
from tests.support.serving import llama_cpp, serving


@dataclass
class Served:
    daemon: DaemonProcess
    root: Path
    model: str


@pytest.fixture(scope="module")
def served(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("chat") / "home"
    request = llama_cpp(tiny_gguf, ctx_size=512, parallel=2)
    env = path_with(llama_server_binary)
    with serving(root, request, env=env) as (daemon, [info]):
        yield Served(daemon, root, info.models[0])


def roundhouse(
    served: Served, *args: str, stdin: str | int | None = None
) -> subprocess.CompletedProcess[str]:
    return cli.roundhouse(
        served.root,
        *args,
        input=stdin if isinstance(stdin, str) else None,
        stdin=stdin if isinstance(stdin, int) else subprocess.DEVNULL,
        no_color=True,
        timeout=60,
    )


def history(served: Served) -> list[dict[str, Any]]:
    listed = roundhouse(served, "chats", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    conversations: list[dict[str, Any]] = json.loads(listed.stdout)["conversations"]
    return conversations


def conversation(served: Served, conversation_id: str) -> dict[str, Any]:
    shown = roundhouse(served, "chats", "show", conversation_id, "--json")
    assert shown.returncode == 0, shown.stderr
    found: dict[str, Any] = json.loads(shown.stdout)
    return found


def test_one_prompt_streams_the_reply_and_saves_it(served: Served) -> None:
    done = roundhouse(
        served, "chat", served.model, "--prompt", "Tell me a story", "--max-tokens", "12"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "no reply on stdout"
    assert "ms to first token" in done.stderr and "tok/s" in done.stderr
    newest = history(served)[0]
    assert newest["title"] == "Tell me a story" and newest["model"] == served.model
    saved = conversation(served, newest["id"])
    question, answer = saved["messages"]
    assert question == {**question, "role": "user", "content": "Tell me a story"}
    assert answer["role"] == "assistant" and answer["content"] == done.stdout.rstrip("\n")
    assert answer["stats"]["completion_tokens"] == 12
    assert answer["stats"]["finish_reason"] == "length"
    # Shown and removed through the CLI too.
    table = roundhouse(served, "chats", "show", newest["id"])
    assert "Tell me a story" in table.stdout and "to first token" in table.stdout
    assert roundhouse(served, "chats", "rm", newest["id"]).returncode == 0
    assert newest["id"] not in {c["id"] for c in history(served)}


def test_stdin_and_json_give_the_figures(served: Served) -> None:
    done = roundhouse(
        served,
        "chat",
        served.model,
        "--json",
        "--max-tokens",
        "8",
        "--temperature",
        "0",
        stdin="Piped question\nwith a second line\n",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    stats = result["stats"]
    assert result["content"] and result["conversation_id"]
    assert 0 < stats["ttft_ms"] < stats["duration_s"] * 1000
    assert stats["completion_tokens"] == 8 and stats["prompt_tokens"] > 0
    assert stats["tokens_per_s"] > 0 and not stats["stopped"]
    assert stats["engine"] in (None, "llama.cpp")
    saved = conversation(served, result["conversation_id"])
    assert saved["title"] == "Piped question"
    assert saved["params"] == {"temperature": 0.0, "top_p": None, "max_tokens": 8}

    before = len(history(served))
    unsaved = roundhouse(
        served, "chat", served.model, "-p", "hi", "--max-tokens", "2", "--no-save", "--json"
    )
    assert unsaved.returncode == 0, unsaved.stderr
    assert json.loads(unsaved.stdout)["conversation_id"] is None
    assert len(history(served)) == before


def test_errors_are_words_with_exit_code_one(served: Served) -> None:
    unknown = roundhouse(served, "chat", "no-such-model", "--prompt", "hi")
    assert unknown.returncode == 1
    assert "no-such-model" in unknown.stderr and "Traceback" not in unknown.stderr
    assert not unknown.stdout


def test_without_a_model_it_chats_with_the_active_one(served: Served, tmp_path: Path) -> None:
    """The app's active model: the one set (picked, started, chatted with), else the only
    model running; none of either is an error in words."""
    # The gateway lists the model started on a file by the file's stem.
    listed = Path(served.model).stem
    asyncio.run(_set_active_model(served.daemon, None))
    assert asyncio.run(_active_model(served.daemon)) is None
    only = roundhouse(served, "chat", "-p", "hi", "--max-tokens", "2", "--no-save", "--json")
    assert only.returncode == 0, only.stderr
    assert json.loads(only.stdout)["model"] == listed
    assert asyncio.run(_active_model(served.daemon)) is None, "nothing kept, nothing set"
    # A chat kept in the history makes its model the active one, for the app too, under
    # the name the gateway lists it by, whatever name the chat used.
    kept = roundhouse(served, "chat", served.model, "-p", "hi", "--max-tokens", "2")
    assert kept.returncode == 0, kept.stderr
    assert asyncio.run(_active_model(served.daemon)) == listed

    idle = start_daemon(tmp_path / "idle")
    try:
        no_model = subprocess.run(
            [sys.executable, "-m", "roundhouse", "--home", str(idle.home.root), "chat", "-p", "hi"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
        )
    finally:
        idle.stop(timeout=30)
    assert no_model.returncode == 1, no_model.stdout
    assert "roundhouse gateway models" in no_model.stderr and "Traceback" not in no_model.stderr
    assert "none is active" in no_model.stderr


async def _set_active_model(daemon: DaemonProcess, model: str | None) -> None:
    async with DaemonClient(daemon.url, daemon.token) as client:
        current = await client.settings()
        chat = current.chat.model_copy(update={"active_model": model})
        await client.put_settings(current.model_copy(update={"chat": chat}))


async def _active_model(daemon: DaemonProcess) -> str | None:
    async with DaemonClient(daemon.url, daemon.token) as client:
        return (await client.settings()).chat.active_model


def test_an_interactive_chat_on_a_terminal(served: Served) -> None:
    before = {c["id"] for c in history(served)}
    main, terminal = os.openpty()
    try:
        os.write(main, b"First turn\nSecond turn\n/reset\nAfter reset\n/exit\n")
        done = roundhouse(served, "chat", served.model, "--max-tokens", "4", stdin=terminal)
    finally:
        os.close(main)
        os.close(terminal)
    assert done.returncode == 0, done.stderr
    assert "Chatting with" in done.stderr and done.stderr.count("to first token") == 3
    new = [c for c in history(served) if c["id"] not in before]
    assert sorted((c["title"], c["message_count"]) for c in new) == [
        ("After reset", 2),
        ("First turn", 4),
    ]


def _read_until(stream: int, wanted: str, timeout_s: float) -> str:
    """What the stream says until `wanted` appears (with "": until it says anything)."""
    seen = ""
    deadline = time.monotonic() + timeout_s
    while (wanted not in seen or not seen) and time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.05)
        if ready:
            seen += os.read(stream, 4096).decode(errors="replace")
    assert seen and wanted in seen, seen
    return seen


def _running_requests(base_url: str) -> float:
    text = httpx.get(base_url + "/metrics", trust_env=False, timeout=5).text
    line = next(x for x in text.splitlines() if x.startswith("vllm:num_requests_running"))
    return float(line.rsplit(" ", 1)[1])


def test_ctrl_c_stops_the_reply_and_keeps_the_chat(served: Served, tmp_path: Path) -> None:
    # A STAND-IN engine (vLLM's API) that paces its tokens: the tiny llama answers whole
    # before a signal could land, and the point here is a reply still streaming.
    slow = start_vllm_serve(tmp_path / "slow", free_port(), "org/slow", "--token-delay", "0.5")
    main, terminal = os.openpty()
    argv = [sys.executable, "-m", "roundhouse", "--home", str(served.root), "chat", "org/slow"]
    chat: subprocess.Popen[bytes] | None = None
    try:

        async def find_it() -> None:
            async with DaemonClient(served.daemon.url, served.daemon.token) as client:
                found = await client.scan_instances()
                assert "org/slow" in {m for i in found.instances for m in i.models}, found

        asyncio.run(find_it())
        os.write(main, b"Keep talking\n")
        chat = subprocess.Popen(
            argv, stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert chat.stdout is not None and chat.stderr is not None
        shown = _read_until(chat.stdout.fileno(), "> ", 30)
        if not shown.split("> ", 1)[1]:
            _read_until(chat.stdout.fileno(), "", 10)
        # The reply has begun: its first word is on the screen and the engine generates.
        assert _running_requests(slow.base_url) == 1
        chat.send_signal(signal.SIGINT)
        _read_until(chat.stderr.fileno(), "stopped", 10)
        # The stream was closed: the engine stops generating within a token or two.
        deadline = time.monotonic() + 3
        while _running_requests(slow.base_url) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _running_requests(slow.base_url) == 0
        os.write(main, b"/exit\n")
        assert chat.wait(timeout=20) == 0, chat.stderr.read()
        newest = history(served)[0]
        assert newest["title"] == "Keep talking"
        answer = conversation(served, newest["id"])["messages"][1]
        assert answer["stats"]["stopped"] is True
        assert 1 <= answer["stats"]["completion_tokens"] < 12
    finally:
        if chat is not None and chat.poll() is None:
            chat.kill()
            chat.wait()
        os.close(main)
        os.close(terminal)
        slow.stop()
