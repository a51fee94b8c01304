"""`roundhouse engines start|ps|logs|restart|stop|presets` with a real daemon and llama-server."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.daemon_process import DaemonProcess, path_with, running_daemon
from tests.processes import alive, assert_nothing_left
from tests.support import cli


@pytest.fixture
def served(llama_server_binary: Path, tmp_path: Path) -> Iterator[DaemonProcess]:
    with running_daemon(tmp_path / "home", env=path_with(llama_server_binary)) as daemon:
        yield daemon


def _cli(daemon: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return cli.roundhouse(daemon, "engines", *args)


def _ours(daemon: DaemonProcess) -> list[dict[str, Any]]:
    """`engines ps --json` without engines found running on this machine (other tests')."""
    listed = json.loads(_cli(daemon, "ps", "--json").stdout)["instances"]
    return [i for i in listed if i["origin"] != "external"]


def test_start_ps_logs_restart_stop(served: DaemonProcess, tiny_gguf: Path) -> None:
    started = _cli(served, "start", "llama.cpp", "-m", str(tiny_gguf), "-c", "512", "-np", "1")
    assert started.returncode == 0, started.stderr
    assert "OpenAI base URL: http://127.0.0.1:" in started.stdout
    assert "curl " in started.stdout
    # What the engine runs with, as its load report says (threads: its own default).
    assert "Runs with: a 512-token context (1 slot)" in started.stdout, started.stdout
    assert "threads: the engine's default" in started.stdout
    # Before it starts: the fit estimate for these options (one slot of 512 tokens).
    assert (
        "tiny.gguf: Runs on the CPU only" in started.stderr or "tiny.gguf: Fits" in started.stderr
    )
    instance_id = started.stdout.split("Instance ")[1].split()[0]

    infos = _ours(served)
    assert [(i["id"], i["status"]) for i in infos] == [(instance_id, "ready")]
    base_url = infos[0]["base_url"]
    chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    # The engine's own port answers only the daemon; what `start` prints is the gateway.
    direct = httpx.post(f"{base_url}/chat/completions", json=chat, timeout=30, trust_env=False)
    assert direct.status_code == 401
    printed = started.stdout.split("OpenAI base URL: ")[1].split()[0]
    assert printed == f"{served.url}/v1"
    chat["model"] = infos[0]["models"][0]
    reply = httpx.post(f"{printed}/chat/completions", json=chat, timeout=30, trust_env=False)
    assert reply.status_code == 200
    table = _cli(served, "ps")
    assert instance_id in table.stdout and "ready" in table.stdout

    metrics = _cli(served, "metrics", instance_id)
    assert metrics.returncode == 0 and "llamacpp:prompt_tokens_total" in metrics.stdout

    logs = _cli(served, "logs", instance_id[:4], "-n", "5")
    assert logs.returncode == 0, logs.stderr
    assert 0 < len(logs.stdout.splitlines()) <= 5

    first_pid = infos[0]["pid"]
    restarted = _cli(served, "restart", instance_id, "--json")
    assert restarted.returncode == 0, restarted.stderr
    again = json.loads(restarted.stdout)
    assert again["id"] == instance_id and again["status"] == "ready"
    assert again["pid"] != first_pid and not alive(first_pid)

    stopped = _cli(served, "stop", instance_id)
    assert stopped.returncode == 0 and "Stopped" in stopped.stdout
    assert_nothing_left(again["pid"], again["pid"])
    assert _ours(served) == []


def test_start_failures_say_why(served: DaemonProcess, tiny_gguf: Path, tmp_path: Path) -> None:
    bogus = tmp_path / "broken.gguf"
    bogus.write_bytes(b"GGUF" + b"\0" * 64)
    failed = _cli(served, "start", "llama.cpp", "-m", str(bogus))
    assert failed.returncode == 1
    assert "Error:" in failed.stderr and "Last log lines" in failed.stderr
    assert "Traceback" not in failed.stderr
    assert [i["status"] for i in _ours(served)] == ["failed"]
    assert _cli(served, "stop", "--all").returncode == 0

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = str(holder.getsockname()[1])
        taken = _cli(served, "start", "llama.cpp", "-m", str(tiny_gguf), "--port", port)
    assert taken.returncode == 1 and port in taken.stderr and "Traceback" not in taken.stderr

    refused = _cli(served, "start", "llama.cpp", "-m", str(tiny_gguf), "-tp", "2")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr

    missing = _cli(served, "stop", "nosuchid")
    assert missing.returncode == 1 and "roundhouse engines ps" in missing.stderr


def test_presets_from_the_cli(served: DaemonProcess, tiny_gguf: Path) -> None:
    model = str(tiny_gguf)
    started = _cli(
        served, "start", "llama.cpp", "-m", model, "-c", "256", "--save-preset", "tiny", "--json"
    )
    assert started.returncode == 0, started.stderr
    assert _cli(served, "stop", "--all").returncode == 0
    listed = json.loads(_cli(served, "presets", "--json").stdout)["presets"]
    assert [(p["name"], p["options"]["ctx_size"]) for p in listed] == [("tiny", 256)]
    again = _cli(served, "start", "llama.cpp", "-m", model, "--preset", "tiny", "--json")
    assert again.returncode == 0, again.stderr
    assert "256" in json.loads(again.stdout)["argv"]
    assert _cli(served, "stop", "--all").returncode == 0
    deleted = _cli(served, "presets", "--engine", "llama.cpp", "--model", model, "--delete", "tiny")
    assert deleted.returncode == 0, deleted.stderr
    assert "No presets" in _cli(served, "presets").stdout
