"""A user-added OpenAI-compatible endpoint is probed, with and without its API key."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from roundhouse.api.engines import EngineId
from roundhouse.api.external import AttachSource, ExternalEngine
from roundhouse.core.engines.attach import EndpointError, EndpointKeyError, probe_openai_endpoint
from tests.fakes.openai_engines import EngineStandin, start_standin
from tests.processes import assert_nothing_left, free_port

KEY = "sk-endpoint-test"


def probe(url: str, key: str | None = None) -> ExternalEngine:
    return asyncio.run(probe_openai_endpoint(url, key, timeout_s=2.0))


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineStandin]:
    state = tmp_path_factory.mktemp("vllm")
    standin = start_standin("vllm", state, free_port(), "serve", "org/Tiny-Chat", "--api-key", KEY)
    try:
        yield standin
    finally:
        assert standin.stop() == 0, standin.log_text()
        assert_nothing_left(standin.proc.pid, standin.proc.pid)


@pytest.fixture(scope="module")
def open_vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineStandin]:
    state = tmp_path_factory.mktemp("vllm-open")
    args = ("serve", "org/Open", "--served-model-name", "open-a", "open-b")
    standin = start_standin("vllm", state, free_port(), *args)
    try:
        yield standin
    finally:
        assert standin.stop() == 0, standin.log_text()
        assert_nothing_left(standin.proc.pid, standin.proc.pid)


def test_with_the_key_the_models_are_listed(vllm: EngineStandin) -> None:
    entry = probe(vllm.base_url + "/v1/", KEY)
    assert entry.engine == EngineId.OPENAI_COMPATIBLE
    assert entry.found_by == AttachSource.USER_ENDPOINT
    assert entry.base_url == vllm.base_url and entry.healthy
    assert entry.model_ids == ["org/Tiny-Chat"] and entry.pid is None
    assert KEY not in entry.model_dump_json()


def test_without_a_key_or_with_a_wrong_one_the_user_is_told(vllm: EngineStandin) -> None:
    with pytest.raises(EndpointKeyError, match="needs an API key"):
        probe(vllm.base_url)
    with pytest.raises(EndpointKeyError, match="refused the API key") as caught:
        probe(vllm.base_url, "sk-wrong")
    assert "sk-wrong" not in str(caught.value)


def test_a_server_without_a_key_needs_none(open_vllm: EngineStandin) -> None:
    assert probe(open_vllm.base_url).model_ids == ["open-a", "open-b"]
    # A key it does not ask for does no harm.
    assert probe(open_vllm.base_url, "sk-unused").model_ids == ["open-a", "open-b"]


def test_nothing_listening_says_to_start_the_server() -> None:
    with pytest.raises(EndpointError, match=r"Nothing answers at http://127\.0\.0\.1:\d+\. Start"):
        probe(f"http://127.0.0.1:{free_port()}")


class _Foreign(BaseHTTPRequestHandler):
    """A web server that is not OpenAI's: HTML at /v1/models, 404 under /other."""

    def do_GET(self) -> None:
        status, body = (404, b"not here") if self.path.startswith("/other") else (200, b"<html>")
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def foreign() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Foreign)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_server_that_is_not_openai_compatible_is_named_so(foreign: str) -> None:
    with pytest.raises(EndpointError, match="does not look like an OpenAI-compatible server"):
        probe(foreign)
    with pytest.raises(EndpointError, match="has no /v1/models"):
        probe(foreign + "/other")
