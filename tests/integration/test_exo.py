"""exo attached through its API, with a real daemon and the exo stand-in (a real process
under `exo`'s command line): found by the scan and added by address, only its placed models
listed, chats through the gateway with the openai and anthropic clients, never stopped,
started or installed by Roundhouse, and said so in words."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic as anthropic_sdk
import httpx
import openai as openai_sdk
import pytest
from anthropic import Anthropic
from openai import OpenAI

from roundhouse.api.engines import EngineId
from roundhouse.api.external import AttachSource
from roundhouse.api.gateway import InstanceUsage
from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.client import ApiError, DaemonClient
from tests.daemon_process import DaemonProcess, start_daemon
from tests.fakes.exo import ExoStandin, start_exo
from tests.fakes.exo.server import FAILURE
from tests.processes import alive, free_port

PLACED = "mlx-community/Llama-3.2-1B-Instruct-4bit"
# A card exo knows (its /v1/models lists it) but no instance serves.
NOT_PLACED = "mlx-community/Qwen3-0.6B-4bit"
HELLO = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    root = tmp_path_factory.mktemp("exo-daemon")
    env = {
        "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    process = start_daemon(root / "home", env=env)
    try:
        yield process
    finally:
        process.stop(timeout=60)


@pytest.fixture
def exo(tmp_path: Path) -> Iterator[ExoStandin]:
    standin = start_exo(tmp_path / "exo", free_port(), "--standin-place", PLACED)
    try:
        yield standin
    finally:
        standin.stop()


def _cli(daemon: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    root = daemon.home.root
    assert root is not None
    argv = [sys.executable, "-m", "roundhouse", "--home", str(root), *args]
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)


def _exo_entry(instances: list[InstanceInfo], exo: ExoStandin) -> InstanceInfo:
    found = [i for i in instances if i.port == exo.port]
    assert len(found) == 1, instances
    return found[0]


def test_found_by_the_scan_serving_only_its_placed_models_and_never_stopped(
    daemon: DaemonProcess, exo: ExoStandin
) -> None:
    async def main() -> None:
        async with DaemonClient(daemon.url, daemon.token) as client:
            found = _exo_entry((await client.scan_instances()).instances, exo)
            assert found.engine == EngineId.EXO
            assert found.found_by == AttachSource.PROCESS_SCAN
            assert found.status == InstanceStatus.READY
            assert found.pid == exo.proc.pid
            # Its cards list NOT_PLACED too; only the placed model is served.
            assert found.models == [PLACED]
            # No key to put on it: the words say what does protect it.
            assert found.unprotected is not None and "exo has no API key" in found.unprotected
            for force in (False, True):
                with pytest.raises(ApiError) as refused:
                    await client.stop_instance(found.id, force=force)
                assert refused.value.problem.status == 409
                assert "does not stop it" in refused.value.problem.detail
                assert "Traceback" not in refused.value.problem.detail
            assert alive(exo.proc.pid)

    asyncio.run(main())


def test_added_by_address_and_chatted_with_through_every_client(
    daemon: DaemonProcess, exo: ExoStandin
) -> None:
    attached = _cli(daemon, "engines", "attach", exo.base_url + "/v1", "--name", "Studio")
    assert attached.returncode == 0, attached.stderr
    assert f"exo at {exo.base_url}/v1 serves {PLACED}." in attached.stdout

    async def added() -> InstanceInfo:
        async with DaemonClient(daemon.url, daemon.token) as client:
            return _exo_entry((await client.scan_instances()).instances, exo)

    info = asyncio.run(added())
    assert info.engine == EngineId.EXO and info.found_by == AttachSource.USER_ENDPOINT
    assert info.name == "Studio" and info.models == [PLACED]

    listed = httpx.get(daemon.url + "/v1/models", trust_env=False, timeout=30).json()
    ids = {m["id"] for m in listed["data"]}
    assert PLACED in ids and NOT_PLACED not in ids
    tags = httpx.get(daemon.url + "/api/tags", trust_env=False, timeout=30).json()
    names = {m["name"] for m in tags["models"]}
    assert PLACED in names and NOT_PLACED not in names

    direct = httpx.post(
        exo.base_url + "/v1/chat/completions",
        json={"model": PLACED, "messages": HELLO},
        trust_env=False,
        timeout=30,
    ).json()
    expected = direct["choices"][0]["message"]["content"]

    openai = OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60)
    raw = openai.chat.completions.with_raw_response.create(model=PLACED, messages=HELLO)  # type: ignore[arg-type]
    assert raw.headers["x-roundhouse-engine"] == "exo"
    assert raw.parse().choices[0].message.content == expected
    # exo's stream: a keep-alive comment first, chunks typed "chat.completion", usage last.
    stream = openai.chat.completions.create(model=PLACED, messages=HELLO, stream=True)  # type: ignore[arg-type]
    pieces = [c.choices[0].delta.content or "" for c in stream if c.choices]
    assert "".join(pieces) == expected
    # The Responses API and Ollama's /api/chat, translated to its chat completions.
    answer = openai.responses.create(model=PLACED, input="Say hello.")
    assert answer.output_text == expected
    openai.close()
    ollama = httpx.post(
        daemon.url + "/api/chat",
        json={"model": PLACED, "messages": HELLO, "stream": False},
        trust_env=False,
        timeout=60,
    )
    assert ollama.status_code == 200, ollama.text
    assert ollama.json()["message"]["content"] == expected

    anthropic = Anthropic(base_url=daemon.url, api_key="unused", max_retries=0, timeout=60)
    message = anthropic.messages.with_raw_response.create(
        model=PLACED,
        max_tokens=64,
        messages=HELLO,  # type: ignore[arg-type]
    )
    assert message.headers["x-roundhouse-path"] == "translated"
    parsed = message.parse()
    assert parsed.content[0].type == "text" and parsed.content[0].text == expected
    assert parsed.usage.input_tokens == direct["usage"]["prompt_tokens"]
    with anthropic.messages.stream(model=PLACED, max_tokens=64, messages=HELLO) as events:  # type: ignore[arg-type]
        final = events.get_final_message()
    assert final.content[0].type == "text" and final.content[0].text == expected
    assert final.usage.output_tokens == direct["usage"]["completion_tokens"]
    anthropic.close()

    # A card exo knows but has not placed is not served: the gateway says so, not exo's 404.
    unplaced = httpx.post(
        daemon.url + "/v1/chat/completions",
        json={"model": NOT_PLACED, "messages": HELLO},
        trust_env=False,
        timeout=60,
    )
    assert unplaced.status_code == 404, unplaced.text
    assert "Traceback" not in unplaced.text
    assert "place it there in exo's dashboard" in unplaced.json()["error"]["message"]
    # Placed on the cluster (exo's own API, as its dashboard does), it is served without a
    # Scan: a miss makes the gateway look at attached engines again.
    placed = httpx.post(
        exo.base_url + "/place_instance", json={"model_id": NOT_PLACED}, trust_env=False
    )
    assert placed.status_code == 200, placed.text
    deadline = time.monotonic() + 15
    while True:
        late = httpx.post(
            daemon.url + "/v1/chat/completions",
            json={"model": NOT_PLACED, "messages": HELLO},
            trust_env=False,
            timeout=60,
        )
        if late.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert late.status_code == 200, late.text
    assert late.json()["choices"][0]["message"]["content"] == expected

    # Every request counted with exo's own numbers, streamed ones from their last chunk.
    async def usage() -> InstanceUsage:
        async with DaemonClient(daemon.url, daemon.token) as client:
            rows = (await client.gateway_usage()).usage
            return next(u for u in rows if u.instance == info.id)

    counted = asyncio.run(usage())
    assert counted.requests == 7, counted
    assert counted.completion_tokens == 7 * direct["usage"]["completion_tokens"], counted
    assert counted.prompt_tokens >= 7 * direct["usage"]["prompt_tokens"] - 7, counted

    detached = _cli(daemon, "engines", "stop", info.id)
    assert detached.returncode == 0, detached.stderr
    assert alive(exo.proc.pid), "detaching does not stop exo"


def test_exo_is_neither_installed_nor_started_and_the_cli_says_so(daemon: DaemonProcess) -> None:
    for args in (("engines", "install", "exo"), ("engines", "start", "exo", "-m", PLACED)):
        result = _cli(daemon, *args)
        assert result.returncode != 0
        assert "does not install, start or stop it" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_a_failed_generation_reaches_every_client_as_an_error(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    failing = start_exo(
        tmp_path / "failing", free_port(), "--standin-place", PLACED, "--standin-fail-after", "3"
    )
    try:
        attached = _cli(daemon, "engines", "attach", failing.base_url)
        assert attached.returncode == 0, attached.stderr
        openai = OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        with pytest.raises(openai_sdk.APIError) as streamed:
            for _ in openai.chat.completions.create(model=PLACED, messages=HELLO, stream=True):  # type: ignore[arg-type]
                pass
        assert FAILURE in str(streamed.value)
        # Without a stream exo drops the connection after its 200: the gateway says so.
        with pytest.raises(openai_sdk.APIStatusError) as whole:
            openai.chat.completions.create(model=PLACED, messages=HELLO)  # type: ignore[arg-type]
        assert whole.value.status_code >= 500
        assert "Traceback" not in str(whole.value)
        openai.close()
        # Its own Messages stream would end with a plain message_stop; translated, the
        # Anthropic client gets the error (ADR 38).
        anthropic = Anthropic(base_url=daemon.url, api_key="unused", max_retries=0, timeout=60)
        with (
            pytest.raises(anthropic_sdk.APIError) as translated,
            anthropic.messages.stream(model=PLACED, max_tokens=64, messages=HELLO) as events,  # type: ignore[arg-type]
        ):
            events.get_final_message()
        assert FAILURE in str(translated.value)
        anthropic.close()
    finally:
        failing.stop()
