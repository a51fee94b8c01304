"""The Ollama client against the Ollama stand-in run as a real process, and its error mapping."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import aclosing
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from roundhouse.api.ollama import OllamaPullProgress
from roundhouse.core.engines.ollama_api import (
    OllamaClient,
    OllamaError,
    OllamaNotRunningError,
    OllamaPullError,
    parse_loaded,
    parse_model,
    parse_shown,
)
from roundhouse.core.errors import InvalidInputError, NotFoundError
from tests.fakes.ollama import OllamaStandin, start_standin
from tests.processes import assert_nothing_left, free_port

T = TypeVar("T")


def run(body: Callable[[OllamaClient], Awaitable[T]], base_url: str) -> T:
    """Run `body` with a fresh client in a fresh event loop (each test owns its loop)."""

    async def main() -> T:
        async with OllamaClient(base_url, timeout_s=5.0) as ollama:
            return await body(ollama)

    return asyncio.run(main())


def started(state: Path, *flags: str) -> OllamaStandin:
    return start_standin(state, free_port(), *flags)


def stopped(standin: OllamaStandin) -> None:
    assert standin.stop() == 0, standin.log_text()
    assert_nothing_left(standin.proc.pid, standin.proc.pid)


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OllamaStandin]:
    proc = started(tmp_path_factory.mktemp("ollama"))
    try:
        yield proc
    finally:
        stopped(proc)


@pytest.fixture(scope="module")
def url(standin: OllamaStandin) -> str:
    return standin.base_url


@pytest.fixture(scope="module")
def tiny(url: str) -> str:
    run(lambda o: o.pull("tiny"), url)
    return "tiny:latest"


def test_version_and_liveness(url: str) -> None:
    async def body(ollama: OllamaClient) -> tuple[str, bool]:
        return await ollama.version(), await ollama.is_running()

    version, running = run(body, url)
    assert version == "0.6.8" and running is True


def test_pull_reports_growing_progress_then_success_and_the_model_is_listed(url: str) -> None:
    seen: list[OllamaPullProgress] = []

    async def body(ollama: OllamaClient) -> OllamaPullProgress:
        assert "small:latest" not in [m.name for m in await ollama.list_models()]
        return await ollama.pull("small", on_progress=seen.append)

    final = run(body, url)
    assert final.done and final.status == "success" and seen[-1] is final
    assert seen[0].status == "pulling manifest"
    layers = [s for s in seen if s.digest is not None]
    weights = [s for s in layers if s.digest == layers[0].digest]
    assert len(weights) >= 5 and weights[0].completed is None  # absent at first, as in Ollama
    completed = [s.completed or 0 for s in weights]
    assert completed == sorted(completed) and completed[-1] == weights[0].total
    assert weights[-1].fraction == 1.0 and weights[1].fraction is not None

    models = {m.name: m for m in run(lambda o: o.list_models(), url)}
    small = models["small:latest"]
    assert small.size > 24 * 1024 and len(small.digest) == 64
    assert isinstance(small.modified_at, datetime)
    assert small.details.format == "gguf" and small.details.family == "qwen2"
    assert small.details.parameter_size == "494.03M"
    assert small.details.quantization_level == "Q8_0"


def test_a_pull_of_an_unknown_model_is_not_found_in_words(url: str) -> None:
    with pytest.raises(NotFoundError, match=r"registry has no model 'no-such-model'.*ollama\.com"):
        run(lambda o: o.pull("no-such-model"), url)


def test_a_bad_name_is_refused_before_any_progress(url: str) -> None:
    with pytest.raises(InvalidInputError, match="invalid model name"):
        run(lambda o: o.pull("a/b/c"), url)
    with pytest.raises(InvalidInputError, match="not an Ollama model name"):
        run(lambda o: o.pull("two words"), url)


def test_show_reports_model_info_template_capabilities(url: str, tiny: str) -> None:
    shown = run(lambda o: o.show(tiny), url)
    assert shown.name == tiny
    assert shown.architecture == "llama" and shown.context_length == 2048
    assert shown.model_info["general.parameter_count"] == 12_345_678
    assert shown.model_info["llama.attention.head_count_kv"] == 2
    assert shown.details.quantization_level == "Q4_K_M"
    assert shown.capabilities == ["completion"]
    assert shown.template and shown.parameters and "stop" in shown.parameters


def test_show_of_a_missing_model_suggests_pulling_it(url: str) -> None:
    with pytest.raises(NotFoundError, match=r"no model 'ghost'.*ollama pull ghost"):
        run(lambda o: o.show("ghost"), url)


def test_load_and_unload_are_reflected_in_ps(url: str, tiny: str) -> None:
    async def body(ollama: OllamaClient) -> None:
        await ollama.load(tiny, keep_alive="-1")  # a string "-1": sent as the number
        (entry,) = [m for m in await ollama.loaded_models() if m.name == tiny]
        assert entry.size_vram > 0 and entry.size_vram <= entry.size and entry.gpu_share == 1.0
        assert entry.expires_at is not None and entry.expires_at.year > 2200  # forever
        assert entry.context_length == 4096 and entry.details.family == "llama"

        await ollama.load(tiny, keep_alive="10m", context_length=8192)
        (entry,) = [m for m in await ollama.loaded_models() if m.name == tiny]
        assert entry.context_length == 8192 and entry.expires_at is not None
        left = entry.expires_at - datetime.now().astimezone()
        assert timedelta(minutes=9) < left <= timedelta(minutes=10)

        await ollama.unload(tiny)
        assert tiny not in [m.name for m in await ollama.loaded_models()]
        await ollama.unload(tiny)  # unloading what is not loaded is no error

    run(body, url)


def test_an_embedding_model_loads_through_the_embed_endpoint(url: str) -> None:
    async def body(ollama: OllamaClient) -> None:
        await ollama.pull("embed")
        await ollama.load("embed", keep_alive=60)
        assert "embed:latest" in [m.name for m in await ollama.loaded_models()]
        await ollama.unload("embed")
        assert "embed:latest" not in [m.name for m in await ollama.loaded_models()]

    run(body, url)
    with httpx.Client(base_url=url, trust_env=False) as http:  # as Ollama: it cannot generate
        reply = http.post("/api/generate", json={"model": "embed"})
    assert reply.status_code == 400 and reply.json()["error"] == '"embed" does not support generate'


def test_loading_a_missing_model_or_a_bad_keep_alive_is_refused(url: str) -> None:
    with pytest.raises(NotFoundError, match="Pull it first"):
        run(lambda o: o.load("ghost", keep_alive=-1), url)
    with pytest.raises(InvalidInputError, match="not a duration"):
        run(lambda o: o.load("tiny", keep_alive="soon"), url)


def test_the_standin_refuses_a_keep_alive_string_without_unit_as_ollama_does(
    url: str, tiny: str
) -> None:
    with httpx.Client(base_url=url, trust_env=False) as http:
        reply = http.post("/api/generate", json={"model": tiny, "keep_alive": "-1"})
    assert reply.status_code == 400 and "missing unit" in reply.json()["error"]


def test_delete_then_list(url: str) -> None:
    async def body(ollama: OllamaClient) -> list[str]:
        await ollama.pull("embed")
        assert "embed:latest" in [m.name for m in await ollama.list_models()]
        await ollama.delete("embed")
        return [m.name for m in await ollama.list_models()]

    assert "embed:latest" not in run(body, url)
    with pytest.raises(NotFoundError, match="no model 'embed'"):
        run(lambda o: o.delete("embed"), url)


def test_nothing_listening_says_ollama_is_not_running_and_how_to_start_it() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    for call in (
        lambda o: o.list_models(),
        lambda o: o.pull("tiny"),
        lambda o: o.load("tiny"),
    ):
        with pytest.raises(OllamaNotRunningError) as caught:
            run(call, dead)
        message = str(caught.value)
        assert f"isn't running at {dead}" in message and "ollama serve" in message
    assert run(lambda o: o.is_running(), dead) is False


def test_a_pull_that_fails_midway_says_it_resumes(tmp_path: Path) -> None:
    standin = started(tmp_path / "failing", "--fail-pull-after-bytes", "3000")
    try:
        seen: list[OllamaPullProgress] = []
        with pytest.raises(OllamaPullError, match=r"unexpected EOF.*resumes"):
            run(lambda o: o.pull("small", on_progress=seen.append), standin.base_url)
        assert max(s.completed or 0 for s in seen) == 3000
    finally:
        stopped(standin)


def test_cancelling_a_pull_closes_the_stream_and_the_next_pull_resumes(tmp_path: Path) -> None:
    standin = started(tmp_path / "slow", "--pull-delay", "0.1")
    try:

        async def cancel_midway(ollama: OllamaClient) -> float:
            some = asyncio.Event()

            def progress(step: OllamaPullProgress) -> None:
                if (step.completed or 0) >= 4096:
                    some.set()

            task = asyncio.create_task(ollama.pull("small", on_progress=progress))
            await asyncio.wait_for(some.wait(), 10)
            started_at = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            took = time.monotonic() - started_at
            assert "small:latest" not in [m.name for m in await ollama.list_models()]
            return took

        assert run(cancel_midway, standin.base_url) < 1.0  # the rest would take 2 s

        async def leave_the_loop(ollama: OllamaClient) -> OllamaPullProgress:
            async with aclosing(ollama.pull_stream("small")) as steps:
                async for step in steps:
                    if step.digest is not None:
                        return step  # leaving early closes the stream
            raise AssertionError("no layer progress")

        first = run(leave_the_loop, standin.base_url)
        assert (first.completed or 0) >= 4096  # the partial download was kept: it resumes

        final = run(lambda o: o.pull("small"), standin.base_url)
        assert final.done
        assert "small:latest" in [m.name for m in run(lambda o: o.list_models(), standin.base_url)]
    finally:
        stopped(standin)


# -- tolerance and odd answers (no server needed) -----------------------------------------------


def test_fields_ollama_adds_are_ignored_and_nulls_take_defaults() -> None:
    entry: dict[str, Any] = {
        "name": "qwen3:8b",
        "model": "qwen3:8b",
        "remote_model": "qwen3:8b",
        "remote_host": "https://ollama.com:443",
        "modified_at": "2025-06-01T10:22:33.123456789-07:00",  # Go's nanoseconds
        "size": 5_200_000_000,
        "digest": "a" * 64,
        "details": {"format": "gguf", "families": None, "brand_new": {"x": 1}},
    }
    model = parse_model(entry)
    assert model.name == "qwen3:8b" and model.details.families == []
    assert model.modified_at is not None and model.modified_at.microsecond == 123456

    loaded = parse_loaded(entry | {"size_vram": 0, "expires_at": "2318-01-01T00:00:00Z"})
    assert loaded.gpu_share == 0.0 and loaded.context_length is None
    shown = parse_shown("qwen3:8b", {"model_info": {}, "projector_info": {}, "tensors": []})
    assert shown.architecture is None and shown.context_length is None


def _mock(handler: Callable[[httpx.Request], httpx.Response]) -> OllamaClient:
    return OllamaClient("http://ollama.test", transport=httpx.MockTransport(handler))


def test_null_model_lists_are_empty_and_foreign_answers_are_named() -> None:
    async def main() -> None:
        async with _mock(lambda r: httpx.Response(200, json={"models": None})) as ollama:
            assert await ollama.list_models() == []
            assert await ollama.loaded_models() == []
        async with _mock(lambda r: httpx.Response(200, text="<html>hi</html>")) as ollama:
            with pytest.raises(OllamaError, match="Is it really Ollama"):
                await ollama.list_models()
        page = httpx.Response(404, text="404 page not found")
        async with _mock(lambda r: page) as ollama:
            with pytest.raises(OllamaError, match=r"does not know /api/ps.*Update Ollama"):
                await ollama.loaded_models()
        busy = httpx.Response(500, json={"error": "model runner has unexpectedly stopped"})
        async with _mock(lambda r: busy) as ollama:
            with pytest.raises(OllamaError, match=r"answered 500 to loading x.*unexpectedly"):
                await ollama.load("x")

    asyncio.run(main())


def test_a_stream_that_ends_without_success_is_a_pull_error() -> None:
    lines = b'{"status":"pulling manifest"}\n{"status":"pulling abc","total":10,"completed":5}\n'

    async def main() -> None:
        async with _mock(lambda r: httpx.Response(200, content=lines)) as ollama:
            with pytest.raises(OllamaPullError, match=r"stopped sending progress.*resumes"):
                await ollama.pull("x")

    asyncio.run(main())
