"""`/v1/rerank` and `/v1/score` through the gateway to the real llama-server on the tiny model:
an instance started with reranking ranks the documents, one started without says so in the
engine's words, llama-server has no /score (its 404 comes back), and the routes keep the
gateway's guards: a web page's Origin, the key once one is set, media URLs, unlisted fields.

The tiny model has no classifier head: llama-server still starts with --reranking and scores
with its rank pooling, so the scores mean nothing, but the routing and the shapes are real.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import Preset
from roundhouse.client import DaemonClient
from tests.daemon_process import DaemonProcess, path_with, start_daemon
from tests.support.standins import keyring_env

RANKER, PLAIN = "rerank-tiny", "plain-tiny"
KEY = "rh-rerank-test-key-0123456789abcdef"
QUERY = {"query": "what is a roundhouse?", "documents": ["a building for locomotives", "tea"]}


@dataclass
class Env:
    daemon: DaemonProcess

    def run(self, coro_fn: Callable[[DaemonClient], Any]) -> Any:
        async def main() -> Any:
            async with DaemonClient(self.daemon.url, self.daemon.token) as client:
                return await coro_fn(client)

        return asyncio.run(main())

    def post(self, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
        return httpx.post(
            self.daemon.url + path, json=body, headers=headers, timeout=60, trust_env=False
        )


@pytest.fixture(scope="module")
def env(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Env]:
    tmp = tmp_path_factory.mktemp("rerank")
    daemon = start_daemon(tmp / "home", env={**path_with(llama_server_binary), **keyring_env(tmp)})
    found = Env(daemon)
    try:
        for name, ranking in ((RANKER, True), (PLAIN, False)):
            path = str(tmp / f"{name}.gguf")
            shutil.copy(tiny_gguf, path)
            options = InstanceOptions(model=path, ctx_size=512, parallel=1, reranking=ranking)
            preset = Preset(engine=EngineId.LLAMA_CPP, model=path, options=options)
            found.run(lambda c, p=preset: c.save_preset(p))
        yield found
    finally:
        if daemon.process.poll() is None:
            daemon.stop(timeout=60)


def test_rerank_reaches_the_instance_started_with_reranking(env: Env) -> None:
    reply = env.post("/v1/rerank", {"model": RANKER, **QUERY, "top_n": 2})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert sorted(r["index"] for r in body["results"]) == [0, 1]
    assert all(isinstance(r["relevance_score"], float) for r in body["results"])
    assert body["usage"]["prompt_tokens"] > 0
    assert reply.headers["x-roundhouse-engine"] == "llama.cpp"
    assert reply.headers["x-roundhouse-path"] == "passthrough"
    instance = reply.headers["x-roundhouse-instance"]
    usage = env.run(lambda c: c.gateway_usage()).usage
    assert next(u for u in usage if u.instance == instance).by_api.get("openai/passthrough")


def test_an_instance_without_reranking_and_a_missing_score_say_so(env: Env) -> None:
    plain = env.post("/v1/rerank", {"model": PLAIN, **QUERY})
    # llama-server's own words: it was not started with reranking.
    assert plain.status_code == 501, plain.text
    assert "reranking" in plain.json()["error"]["message"]
    score = env.post("/v1/score", {"model": RANKER, "text_1": "a", "text_2": ["b", "c"]})
    assert score.status_code == 404 and score.headers["x-roundhouse-engine"] == "llama.cpp"
    unknown = env.post("/v1/rerank", {"model": "no-such-ranker", **QUERY})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "model_not_found"


def test_rerank_keeps_the_gateways_guards(env: Env) -> None:
    foreign = env.post("/v1/rerank", {"model": RANKER, **QUERY}, origin="https://evil.example")
    assert foreign.status_code == 403
    assert foreign.json()["error"]["code"] == "origin_not_allowed"
    image = {"content": [{"type": "image_url", "image_url": {"url": "http://169.254.169.254/"}}]}
    media = env.post("/v1/rerank", {"model": RANKER, "query": "q", "documents": [image]})
    assert media.status_code == 400 and media.json()["error"]["code"] == "media_url_not_allowed"
    assert media.json()["error"]["param"] == "documents[0].content[0].image_url.url"
    slot = env.post("/v1/rerank", {"model": RANKER, **QUERY, "id_slot": 0})
    assert slot.status_code == 400 and slot.json()["error"]["param"] == "id_slot"
    extra = env.post("/v1/rerank", {"model": RANKER, **QUERY, "vendor_flag": 1})
    assert (
        extra.status_code == 200 and extra.headers["x-roundhouse-dropped-fields"] == "vendor_flag"
    )

    env.run(lambda c: c.set_gateway_key(KEY))
    try:
        keyless = env.post("/v1/score", {"model": RANKER, "text_1": "a", "text_2": "b"})
        assert keyless.status_code == 401
        assert env.post("/v1/rerank", {"model": RANKER, **QUERY}).status_code == 401
        keyed = env.post("/v1/rerank", {"model": RANKER, **QUERY}, authorization=f"Bearer {KEY}")
        assert keyed.status_code == 200, keyed.text
    finally:
        env.run(lambda c: c.clear_gateway_key())
