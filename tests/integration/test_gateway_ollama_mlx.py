"""Ollama's API through the gateway to a real mlx_lm.server (mlx[cpu] on Linux) serving the
tiny HF model, with the official `ollama` client: listed and shown, chat whole and streamed,
each ending with `done: true` and the engine's own counts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import ollama
import pytest

from roundhouse.api.instances import InstanceInfo
from tests.daemon_process import DaemonProcess
from tests.support.serving import mlx, mlx_home, serving

READY_TIMEOUT_S = 90.0
MESSAGES = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(scope="module")
def served(
    mlx_python: str, tiny_hf_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DaemonProcess, InstanceInfo]]:
    root = mlx_home(tmp_path_factory.mktemp("gateway-ollama-mlx") / "home", mlx_python)
    with serving(root, mlx(tiny_hf_model), ready_timeout_s=READY_TIMEOUT_S) as (daemon, [info]):
        yield daemon, info


def _engine_usage(daemon: DaemonProcess, info: InstanceInfo, max_tokens: int) -> dict[str, int]:
    reply = httpx.post(
        info.base_url + "/chat/completions",
        json={
            "model": info.models[0],
            "messages": MESSAGES,
            "max_tokens": max_tokens,
            "temperature": 0,
        },
        headers=daemon.engine_headers(info.id),
        timeout=60,
        trust_env=False,
    )
    reply.raise_for_status()
    usage: dict[str, int] = reply.json()["usage"]
    return usage


def test_listed_shown_and_chat_whole(served: tuple[DaemonProcess, InstanceInfo]) -> None:
    daemon, info = served
    client = ollama.Client(host=daemon.url, timeout=60)
    name = Path(info.models[0]).name
    listed = {m.model: m for m in client.list().models}
    assert name in listed, listed
    details = listed[name].details
    assert details is not None and details.format == "safetensors" and details.family == "llama"
    assert "completion" in (client.show(name).capabilities or [])
    reply = client.chat(model=name, messages=MESSAGES, options={"num_predict": 6, "temperature": 0})
    assert reply.done is True and reply.message.content
    engine = _engine_usage(daemon, info, 6)
    assert reply.prompt_eval_count == engine["prompt_tokens"]
    assert reply.eval_count == engine["completion_tokens"]


def test_chat_streamed_ends_with_done_and_counts(
    served: tuple[DaemonProcess, InstanceInfo],
) -> None:
    daemon, info = served
    client = ollama.Client(host=daemon.url, timeout=60)
    name = Path(info.models[0]).name
    parts = list(
        client.chat(
            model=f"{name}:latest",
            messages=MESSAGES,
            stream=True,
            options={"num_predict": 6, "temperature": 0},
        )
    )
    assert parts[-1].done is True and not any(p.done for p in parts[:-1])
    assert "".join(p.message.content or "" for p in parts)
    engine = _engine_usage(daemon, info, 6)
    assert parts[-1].prompt_eval_count == engine["prompt_tokens"]
    assert parts[-1].eval_count == engine["completion_tokens"]
