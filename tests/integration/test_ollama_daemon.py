"""Ollama through the daemon and the CLI: the Ollama stand-in runs as `ollama serve` (as the
desktop app would), the daemon attaches to it at OLLAMA_HOST; list, pull with progress,
show, load and unload (ps with size_vram), delete, and errors in words."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceOrigin
from roundhouse.api.ollama import OllamaLoadRequest
from roundhouse.client import ApiError, DaemonClient
from tests.daemon_process import DaemonProcess
from tests.fakes.ollama import OllamaStandin
from tests.support import cli
from tests.support.standins import ollama_attached


@pytest.fixture
def attached(tmp_path: Path) -> Iterator[tuple[DaemonProcess, OllamaStandin]]:
    with ollama_attached(tmp_path) as attached:
        yield attached


def test_models_through_the_daemon(attached: tuple[DaemonProcess, OllamaStandin]) -> None:
    daemon, standin = attached

    async def main() -> None:
        async with DaemonClient(daemon.url, daemon.token) as client:
            listed = await client.ollama_models()
            assert listed.base_url.endswith(f":{standin.port}") and listed.models == []

            steps = [step async for step in client.ollama_pull("tiny")]
            assert steps[-1].status == "success"
            completed = [s.completed for s in steps if s.total and s.completed is not None]
            assert completed == sorted(completed) or len({s.digest for s in steps}) > 1
            assert any(s.total for s in steps)

            names = [m.name for m in (await client.ollama_models()).models]
            assert names == ["tiny:latest"]
            shown = await client.ollama_show("tiny")
            assert shown.model_info and shown.details.family

            # The attached Ollama is listed as an instance; requests can name it.
            scanned = (await client.scan_instances()).instances
            ours = [i for i in scanned if i.engine == EngineId.OLLAMA]
            assert ours and ours[0].origin == InstanceOrigin.EXTERNAL
            await client.ollama_load(
                OllamaLoadRequest(model="tiny", keep_alive=-1), instance=ours[0].id
            )
            loaded = (await client.ollama_loaded()).models
            assert [m.name for m in loaded] == ["tiny:latest"] and loaded[0].size_vram > 0
            await client.ollama_unload("tiny")
            assert (await client.ollama_loaded()).models == []

            await client.ollama_delete("tiny")
            assert (await client.ollama_models()).models == []

            with pytest.raises(ApiError) as missing:
                async for _ in client.ollama_pull("no-such-model"):
                    pass
            assert missing.value.problem.status == 404
            with pytest.raises(ApiError) as not_ollama:
                await client.ollama_models(instance="nosuch")
            assert not_ollama.value.problem.status == 404

    asyncio.run(main())


def test_ollama_from_the_cli(attached: tuple[DaemonProcess, OllamaStandin]) -> None:
    daemon, _ = attached

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return cli.roundhouse(daemon, "ollama", *args, timeout=60)

    pulled = run("pull", "tiny")
    assert pulled.returncode == 0, pulled.stderr
    assert "Pulled tiny" in pulled.stdout
    listed = json.loads(run("list", "--json").stdout)
    assert [m["name"] for m in listed["models"]] == ["tiny:latest"]
    assert "tiny:latest" in run("list").stdout
    assert "general.architecture" in run("show", "tiny").stdout
    assert run("load", "tiny", "--keep-alive", "10m").returncode == 0
    assert "tiny:latest" in run("ps").stdout
    assert run("unload", "tiny").returncode == 0
    assert run("rm", "tiny").returncode == 0
    missing = run("show", "tiny")
    assert missing.returncode == 1 and "pull" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_model_pulled_after_the_daemon_started_is_served_by_the_gateway(
    attached: tuple[DaemonProcess, OllamaStandin],
) -> None:
    """Ollama serves a model as soon as it is pulled, with no scan asked for: a request
    naming it, and the gateway's listing, look at the engines running without us again."""
    daemon, _standin = attached

    async def main() -> None:
        async with DaemonClient(daemon.url, daemon.token) as client:
            # The daemon found Ollama at start, serving nothing.
            await client.scan_instances()
            steps = [step async for step in client.ollama_pull("tiny")]
            assert steps[-1].status == "success"
            async with httpx.AsyncClient(trust_env=False, timeout=30) as http:
                reply = await http.post(
                    f"{daemon.url}/v1/chat/completions",
                    json={"model": "tiny", "messages": [{"role": "user", "content": "hi"}]},
                )
                assert reply.status_code == 200, reply.text
                assert reply.headers["x-roundhouse-engine"] == "ollama"
            listed = {m.id for m in (await client.gateway_models()).models}
            assert "tiny:latest" in listed or "tiny" in listed, listed

    asyncio.run(main())
