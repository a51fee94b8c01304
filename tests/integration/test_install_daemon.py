"""Installs through a real daemon and the CLI: llama.cpp from a local release server (the
build for this machine, checksum checked, switch, remove, a corrupt download refused), and
mlx-lm into a managed environment with real pip, offline, from pins with the test wheels'
hashes; a version other than the pinned one refused unless unverified."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess, start_daemon
from tests.fakes.releases.server import ReleaseServer
from tests.unit.install.wheels import mlx_wheels_and_pins


@pytest.fixture
def releases() -> Iterator[ReleaseServer]:
    with ReleaseServer() as server:
        yield server


@pytest.fixture
def daemon(releases: ReleaseServer, tmp_path: Path) -> Iterator[DaemonProcess]:
    wheels, pins = mlx_wheels_and_pins(tmp_path)
    env = {
        "ROUNDHOUSE_LLAMACPP_RELEASES_URL": releases.releases_url,
        # The engines' pins: the test wheels at their versions, with their hashes.
        "ROUNDHOUSE_ENGINE_PINS": str(pins),
        # pip reads its options from the environment: offline, from the test's wheels.
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheels),
        # No llama-server or mlx on PATH: only what the install brings is found.
        "PATH": str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin",
    }
    process = start_daemon(tmp_path / "home", env=env)
    try:
        yield process
    finally:
        process.stop(timeout=60)


def _cli(daemon: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    root = daemon.home.root
    assert root is not None
    argv = [sys.executable, "-m", "roundhouse", "--home", str(root), "engines", *args]
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=180)


def _found(daemon: DaemonProcess, engine: str) -> list[dict[str, object]]:
    listed = json.loads(_cli(daemon, "list", "--json").stdout)
    return [e for e in listed["detection"]["found"] if e["id"] == engine]


@pytest.mark.skipif(sys.platform != "linux", reason="the fake builds are Linux scripts")
def test_llamacpp_install_switch_remove(daemon: DaemonProcess, releases: ReleaseServer) -> None:
    first = _cli(daemon, "install", "llama.cpp", "--tag", "b6000")
    assert first.returncode == 0, first.stderr
    assert "Chosen: b6000: llama-b6000-bin-ubuntu-x64.tar.gz" in first.stdout
    assert "Installed llama.cpp b6000" in first.stdout
    found = _found(daemon, "llama.cpp")
    assert found and found[0]["found_by"] == "managed" and found[0]["version"] == "b6000"

    latest = _cli(daemon, "install", "llama.cpp", "--json")
    assert latest.returncode == 0, latest.stderr
    job = json.loads(latest.stdout)
    assert job["state"] == "done" and job["build"]["tag"] == "b6100"

    builds = json.loads(_cli(daemon, "builds", "--json").stdout)
    assert builds["current"] == "b6100"
    assert sorted(b["tag"] for b in builds["builds"]) == ["b6000", "b6100"]
    assert _cli(daemon, "use", "b6000").returncode == 0
    assert _found(daemon, "llama.cpp")[0]["version"] == "b6000"

    refused = _cli(daemon, "remove", "llama.cpp", "b6000")
    assert refused.returncode == 1 and "current" in refused.stderr
    assert _cli(daemon, "remove", "llama.cpp", "b6100").returncode == 0
    assert [b["tag"] for b in json.loads(_cli(daemon, "builds", "--json").stdout)["builds"]] == [
        "b6000"
    ]


@pytest.mark.skipif(sys.platform != "linux", reason="the fake builds are Linux scripts")
def test_a_corrupt_download_installs_nothing(
    daemon: DaemonProcess, releases: ReleaseServer
) -> None:
    releases.modes.corrupt.add("llama-b6100-bin-ubuntu-x64.tar.gz")
    failed = _cli(daemon, "install", "llama.cpp")
    assert failed.returncode == 1
    assert "sha256" in failed.stderr and "Traceback" not in failed.stderr
    assert json.loads(_cli(daemon, "builds", "--json").stdout)["builds"] == []
    assert _found(daemon, "llama.cpp") == []


@pytest.mark.skipif(sys.platform != "linux", reason="mlx[cpu] is a Linux requirement")
def test_mlx_into_a_managed_environment(daemon: DaemonProcess) -> None:
    # Another version than the pinned one: refused before anything is made, in words.
    refused = _cli(daemon, "install", "mlx", "--version", "0.0.9")
    assert refused.returncode == 1
    assert "0.0.9 is not the version this Roundhouse release pins" in refused.stderr
    assert "--unverified" in refused.stderr and "Traceback" not in refused.stderr
    assert not (daemon.home.data_dir / "engines" / "venvs" / "mlx").exists()

    installed = _cli(daemon, "install", "mlx")
    assert installed.returncode == 0, installed.stderr
    assert "Chosen: mlx-lm 0.0.1 as pinned by this release" in installed.stdout
    assert "Successfully installed" in installed.stdout, "pip's output is streamed"
    assert "Installed mlx-lm 0.0.1" in installed.stdout
    # The test's own venv (on PATH to run Python) has mlx-lm too: look for the managed one.
    assert any(e["found_by"] == "managed" for e in _found(daemon, "mlx"))
    assert _cli(daemon, "remove", "mlx").returncode == 0
    assert all(e["found_by"] != "managed" for e in _found(daemon, "mlx"))
    ollama = _cli(daemon, "install", "ollama")
    assert ollama.returncode == 1 and "ollama.com/download" in ollama.stderr
