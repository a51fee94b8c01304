"""Engines Roundhouse did not start, through a real daemon: found running (vLLM and Ollama
stand-ins under their real command lines), listed as external, stopped only when forced;
an OpenAI-compatible endpoint added with its key in the keyring, then detached."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from roundhouse.api.engines import EngineId
from roundhouse.api.external import AttachSource
from roundhouse.api.instances import AddEndpointRequest, InstanceOrigin, InstanceStatus
from roundhouse.client import ApiError, DaemonClient
from tests.daemon_process import DaemonProcess, start_daemon
from tests.fakes.launchers import start_ollama_serve, start_vllm_serve
from tests.fakes.openai_engines import EngineStandin
from tests.processes import alive, assert_nothing_left, free_port

KEY = "sk-endpoint-secret"


@pytest.fixture
def vllm(tmp_path: Path) -> Iterator[EngineStandin]:
    standin = start_vllm_serve(tmp_path / "vllm", free_port(), "org/tiny-model")
    try:
        yield standin
    finally:
        standin.stop()


def _daemon(tmp_path: Path, ollama_port: int) -> DaemonProcess:
    env = {
        "OLLAMA_HOST": f"127.0.0.1:{ollama_port}",
        "PYTHON_KEYRING_BACKEND": "tests.fakes.keyring_backend.FileKeyring",
        "ROUNDHOUSE_TEST_KEYRING": str(tmp_path / "keyring.json"),
    }
    return start_daemon(tmp_path / "home", env=env)


def test_found_running_listed_as_external_and_stopped_only_when_forced(
    vllm: EngineStandin, tmp_path: Path
) -> None:
    ollama = start_ollama_serve(tmp_path / "ollama", free_port())
    daemon = _daemon(tmp_path, ollama.port)
    try:

        async def main() -> None:
            async with DaemonClient(daemon.url, daemon.token) as client:
                listed = (await client.scan_instances()).instances
                by_port = {i.port: i for i in listed if i.origin == InstanceOrigin.EXTERNAL}
                found = by_port[vllm.port]
                assert found.engine == EngineId.VLLM
                assert found.found_by == AttachSource.PROCESS_SCAN
                assert found.status == InstanceStatus.READY
                assert found.pid == vllm.proc.pid
                assert "org/tiny-model" in found.models
                assert by_port[ollama.port].engine == EngineId.OLLAMA

                # Metrics work for an engine Roundhouse did not start.
                metrics = await client.instance_metrics(found.id)
                assert metrics.url.endswith(f":{vllm.port}/metrics") and metrics.values
                with pytest.raises(ApiError) as no_metrics:
                    await client.instance_metrics(by_port[ollama.port].id)
                assert no_metrics.value.problem.status == 404

                with pytest.raises(ApiError) as refused:
                    await client.stop_instance(found.id)
                assert refused.value.problem.status == 409
                assert "--force" in refused.value.problem.detail
                assert alive(vllm.proc.pid)

                stopped = await client.stop_instance(found.id, force=True)
                assert stopped.origin == InstanceOrigin.EXTERNAL
                assert_nothing_left(vllm.proc.pid, vllm.proc.pid, timeout_s=15)
                again = (await client.scan_instances()).instances
                assert vllm.port not in {i.port for i in again}

        asyncio.run(main())
    finally:
        daemon.stop(timeout=60)
        ollama.stop()


def test_an_added_endpoint_keeps_its_key_in_the_keyring(tmp_path: Path) -> None:
    standin = start_vllm_serve(tmp_path / "vllm", free_port(), "org/keyed", "--api-key", KEY)
    daemon = _daemon(tmp_path, free_port())
    try:

        async def main() -> str:
            async with DaemonClient(daemon.url, daemon.token) as client:
                with pytest.raises(ApiError) as needs_key:
                    await client.add_endpoint(AddEndpointRequest(url=standin.base_url))
                assert needs_key.value.problem.status == 422
                added = await client.add_endpoint(
                    AddEndpointRequest(url=standin.base_url + "/v1", api_key=KEY, name="Box")
                )
                assert added.engine == EngineId.OPENAI_COMPATIBLE
                assert added.found_by == AttachSource.USER_ENDPOINT
                assert added.name == "Box" and added.models == ["org/keyed"]
                assert added.base_url == standin.base_url + "/v1"
                return added.id

        endpoint_id = asyncio.run(main())
        files = (tmp_path / "home" / "config" / "endpoints.json").read_text(encoding="utf-8")
        assert KEY not in files, "the key is never written to Roundhouse's files"
        assert KEY in (tmp_path / "keyring.json").read_text(encoding="utf-8")

        # The daemon restarts: the endpoint comes back, probed with the key from the keyring.
        assert daemon.stop(timeout=60) == 0
        daemon = _daemon(tmp_path, free_port())
        root = tmp_path / "home"
        argv = [sys.executable, "-m", "roundhouse", "--home", str(root), "engines"]
        scanned = subprocess.run(
            [*argv, "scan", "--json"], capture_output=True, text=True, timeout=60
        )
        assert scanned.returncode == 0, scanned.stderr
        infos = {i["id"]: i for i in json.loads(scanned.stdout)["instances"]}
        assert infos[endpoint_id]["status"] == "ready"
        # The gateway sends the key from the keyring: the stand-in refuses requests without.
        chat = httpx.post(
            daemon.url + "/v1/chat/completions",
            json={"model": "org/keyed", "messages": [{"role": "user", "content": "hi"}]},
            trust_env=False,
            timeout=30,
        )
        assert chat.status_code == 200, chat.text
        detached = subprocess.run(
            [*argv, "stop", endpoint_id], capture_output=True, text=True, timeout=60
        )
        assert detached.returncode == 0, detached.stderr
        assert alive(standin.proc.pid), "detaching does not stop the server"
        keyring = json.loads((tmp_path / "keyring.json").read_text(encoding="utf-8"))
        assert KEY not in keyring.values()
    finally:
        daemon.stop(timeout=60)
        standin.stop()


def test_attach_from_the_cli_reads_the_key_from_stdin(tmp_path: Path) -> None:
    standin = start_vllm_serve(tmp_path / "vllm", free_port(), "org/keyed", "--api-key", KEY)
    daemon = _daemon(tmp_path, free_port())
    try:
        root = tmp_path / "home"
        argv = [sys.executable, "-m", "roundhouse", "--home", str(root), "engines", "attach"]
        env = {**os.environ, "COLUMNS": "200"}
        wrong = subprocess.run(
            [*argv, standin.base_url, "--api-key-stdin"],
            input="sk-wrong\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert wrong.returncode == 1 and "refused the API key" in wrong.stderr
        assert "Traceback" not in wrong.stderr
        right = subprocess.run(
            [*argv, standin.base_url, "--api-key-stdin", "--name", "Lab"],
            input=KEY + "\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert right.returncode == 0, right.stderr
        assert "org/keyed" in right.stdout
    finally:
        daemon.stop(timeout=60)
        standin.stop()


def test_an_endpoint_without_a_key_needs_no_keyring(tmp_path: Path) -> None:
    """A machine with no keyring at all still reaches an endpoint added without a key."""
    standin = start_vllm_serve(tmp_path / "vllm", free_port(), "org/open")
    env = {
        "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    daemon = start_daemon(tmp_path / "home", env=env)
    try:

        async def main() -> None:
            async with DaemonClient(daemon.url, daemon.token) as client:
                await client.add_endpoint(AddEndpointRequest(url=standin.base_url))

        asyncio.run(main())
        chat = httpx.post(
            daemon.url + "/v1/chat/completions",
            json={"model": "org/open", "messages": [{"role": "user", "content": "hi"}]},
            trust_env=False,
            timeout=30,
        )
        assert chat.status_code == 200, chat.text
    finally:
        daemon.stop(timeout=60)
        standin.stop()
