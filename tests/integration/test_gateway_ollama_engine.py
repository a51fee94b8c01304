"""Ollama's API on the gateway for a model an Ollama engine serves (the Ollama stand-in, a
real process, attached at OLLAMA_HOST): translated to its OpenAI paths like any engine's,
listed by its tags, chat whole and streamed with the `ollama` client."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import ollama
import pytest

from roundhouse.client import DaemonClient
from tests.daemon_process import DaemonProcess
from tests.fakes.ollama import OllamaStandin
from tests.support.standins import ollama_attached

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def attached(tmp_path: Path) -> Iterator[tuple[DaemonProcess, OllamaStandin]]:
    with ollama_attached(tmp_path) as attached:
        yield attached


def test_an_ollama_engines_model_through_ollamas_api(
    attached: tuple[DaemonProcess, OllamaStandin],
) -> None:
    daemon, _standin = attached

    async def pull() -> None:
        async with DaemonClient(daemon.url, daemon.token) as client:
            await client.scan_instances()
            steps = [step async for step in client.ollama_pull("tiny")]
            assert steps[-1].status == "success"

    asyncio.run(pull())
    client = ollama.Client(host=daemon.url, timeout=30)
    names = {m.model for m in client.list().models}
    assert "tiny:latest" in names or "tiny" in names, names
    whole = client.chat(model="tiny", messages=MESSAGES, options={"num_predict": 4})
    assert whole.done is True and whole.message.content and whole.eval_count == 4
    parts = list(client.chat(model="tiny:latest", messages=MESSAGES, stream=True))
    assert parts[-1].done is True and parts[-1].eval_count
    assert "".join(p.message.content or "" for p in parts)
    raw = client._client.post(  # the headers of a reply the client does not show
        "/api/chat", json={"model": "tiny", "messages": MESSAGES, "stream": False}
    )
    assert raw.headers["x-roundhouse-engine"] == "ollama"
    assert raw.headers["x-roundhouse-path"] == "translated"
