"""Engines already running are found: Ollama by its port, others by a process scan.

The stand-ins run as real processes under the real engines' command lines (a `vllm` console
script, `python -m sglang.launch_server`, an `ollama` script), so the real matcher is tested.
Other tests may run engines on this machine at the same time: assertions pick entries by pid
and port, never by the length of the whole list.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from roundhouse.api.engines import EngineId
from roundhouse.api.external import AttachSource, ExternalEngine
from roundhouse.core.engines.attach import find_running_engines
from roundhouse.core.engines.ollama_api import OllamaClient
from tests.fakes.launchers import start_ollama_serve, start_sglang_module, start_vllm_serve
from tests.fakes.ollama import OllamaStandin, start_standin
from tests.fakes.openai_engines import EngineStandin
from tests.processes import assert_nothing_left, free_port

KEY = "sk-attach-secret"


def find(port_for_ollama: int, **kw: object) -> list[ExternalEngine]:
    env = {"OLLAMA_HOST": f"127.0.0.1:{port_for_ollama}"}
    return asyncio.run(find_running_engines(env=env, **kw))  # type: ignore[arg-type]


def at_port(found: list[ExternalEngine], port: int) -> list[ExternalEngine]:
    return [e for e in found if e.base_url.endswith(f":{port}")]


def stopped(standin: OllamaStandin) -> None:
    assert standin.stop() == 0, standin.log_text()
    assert_nothing_left(standin.proc.pid, standin.proc.pid)


@pytest.fixture(scope="module")
def ollama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OllamaStandin]:
    standin = start_standin(tmp_path_factory.mktemp("ollama"), free_port())

    async def pull() -> None:
        async with OllamaClient(standin.base_url) as client:
            await client.pull("tiny")

    try:
        asyncio.run(pull())
        yield standin
    finally:
        stopped(standin)


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineStandin]:
    state = tmp_path_factory.mktemp("vllm")
    standin = start_vllm_serve(state, free_port(), "org/Tiny-Chat", "--api-key", KEY)
    try:
        yield standin
    finally:
        stopped(standin)


def test_ollama_at_ollama_host_is_found_with_its_models_and_process(
    ollama: OllamaStandin,
) -> None:
    (entry,) = [e for e in find(ollama.port) if e.found_by == AttachSource.OLLAMA_PORT]
    assert entry.engine == EngineId.OLLAMA and entry.base_url == ollama.base_url
    assert entry.healthy and entry.status == "ready" and entry.version == "0.6.8"
    assert entry.model_ids == ["tiny:latest"]
    assert entry.pid == ollama.proc.pid  # the port's owner, though its command line is python


def test_ollama_run_by_the_daemon_itself_is_left_out(ollama: OllamaStandin) -> None:
    found = find(ollama.port, exclude_pids={ollama.proc.pid})
    assert at_port(found, ollama.port) == []


def test_no_ollama_is_reported_where_nothing_or_something_else_answers(
    vllm: EngineStandin,
) -> None:
    nothing = find(free_port())
    assert [e for e in nothing if e.found_by == AttachSource.OLLAMA_PORT] == []
    # vLLM on "Ollama's port": it is found, as vLLM, by the scan, never as Ollama.
    found = at_port(find(vllm.port), vllm.port)
    assert [e.engine for e in found] == [EngineId.VLLM]


def test_vllm_serve_is_found_by_the_scan_with_its_key_redacted(vllm: EngineStandin) -> None:
    (entry,) = at_port(find(free_port()), vllm.port)
    assert entry.engine == EngineId.VLLM and entry.found_by == AttachSource.PROCESS_SCAN
    assert entry.pid == vllm.proc.pid and entry.base_url == vllm.base_url
    assert entry.healthy and entry.version == "0.11.0"
    assert entry.cmdline[1].endswith("/vllm") and entry.cmdline[2:4] == ["serve", "org/Tiny-Chat"]
    assert KEY not in " ".join(entry.cmdline) and "***" in entry.cmdline
    assert KEY not in entry.model_dump_json()
    # /health is open, /v1/models wants the key: healthy, but the models need the key.
    assert entry.needs_api_key and entry.model_ids == []

    assert at_port(find(free_port(), exclude_pids={vllm.proc.pid}), vllm.port) == []


def test_vllm_still_loading_is_listed_as_loading_on_its_command_line_port(
    tmp_path: Path,
) -> None:
    port = free_port()
    standin = start_vllm_serve(
        tmp_path / "vllm", port, "org/Slow", "--load-seconds", "30", wait=False
    )
    try:
        deadline = time.monotonic() + 10
        # Its signal handlers are set before it says so: only then may the test stop it.
        while "loading org/Slow" not in standin.log_text():
            assert time.monotonic() < deadline, standin.log_text()
            time.sleep(0.02)
        while not (found := at_port(find(free_port()), port)):
            assert time.monotonic() < deadline, "the loading vLLM was not found"
        (entry,) = found
        assert entry.pid == standin.proc.pid and not entry.healthy
        assert entry.status == "loading (port not open yet)"
    finally:
        stopped(standin)


def test_sglang_run_as_a_module_is_found_with_its_served_model(tmp_path: Path) -> None:
    standin = start_sglang_module(tmp_path / "sglang", free_port(), "org/Small-Chat")
    try:
        (entry,) = at_port(find(free_port()), standin.port)
        assert entry.engine == EngineId.SGLANG and entry.pid == standin.proc.pid
        assert entry.cmdline[1:3] == ["-m", "sglang.launch_server"]
        assert entry.healthy and entry.model_ids == ["org/Small-Chat"]
    finally:
        stopped(standin)


def test_ollama_serve_found_both_ways_is_listed_once(tmp_path: Path) -> None:
    port = free_port()
    standin = start_ollama_serve(tmp_path / "ollama", port)
    try:
        (entry,) = at_port(find(port), port)
        assert entry.found_by == AttachSource.OLLAMA_PORT and entry.pid == standin.proc.pid
        assert entry.cmdline[1].endswith("/ollama") and entry.cmdline[2] == "serve"

        # Not at OLLAMA_HOST: the scan still finds it, probed on the port it listens on.
        (entry,) = at_port(find(free_port()), port)
        assert entry.found_by == AttachSource.PROCESS_SCAN and entry.engine == EngineId.OLLAMA
        assert entry.healthy and entry.version == "0.6.8"
    finally:
        stopped(standin)


def test_a_server_that_never_answers_does_not_hold_the_search() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts connections (the backlog) but never answers a request
        port = silent.getsockname()[1]
        started = time.monotonic()
        found = find(port, timeout_s=0.3)
        took = time.monotonic() - started
    assert at_port(found, port) == []
    assert took < 3.0
