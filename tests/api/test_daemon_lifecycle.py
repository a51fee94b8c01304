"""One daemon per home, clean stops by signal and by API, and recovery after kill -9."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from roundhouse.api.discovery import read_discovery
from roundhouse.base.paths import resolve_home
from tests.daemon_process import DaemonProcess, serve_argv, start_daemon
from tests.support.cli import roundhouse
from tests.support.gated_daemon import gated_argv


def _files_gone(daemon: DaemonProcess) -> bool:
    return not daemon.home.discovery_file.exists() and not daemon.home.token_file.exists()


def test_second_serve_names_the_running_daemon(daemon: DaemonProcess) -> None:
    assert daemon.home.root is not None
    second = subprocess.run(
        serve_argv(daemon.home.root), capture_output=True, text=True, timeout=60
    )
    assert second.returncode != 0
    assert f"pid {daemon.process.pid}" in second.stderr
    assert daemon.url in second.stderr
    assert "Traceback" not in second.stderr + second.stdout
    assert daemon.process.poll() is None


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_gracefully(home_root: Path, sig: signal.Signals) -> None:
    daemon = start_daemon(home_root)
    daemon.process.send_signal(sig)
    assert daemon.process.wait(timeout=15) == 0
    assert _files_gone(daemon)
    # The process ends without the interpreter's teardown: its log was flushed first.
    last = (daemon.home.log_dir / "daemon.log").read_text(encoding="utf-8").splitlines()[-1]
    assert "Daemon stopped after" in last, last


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_the_daemon_starts_stops_it_cleanly(
    home_root: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    # Until uvicorn captured signals inside its serve, a stop asked during the start killed
    # the process (SIGTERM) or raised in it (SIGINT), leaving its token file behind.
    gate = tmp_path / "gate"
    process = subprocess.Popen(
        gated_argv(home_root, gate), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while not gate.with_suffix(".waiting").exists():
            assert process.poll() is None and time.monotonic() < deadline, "never got to start"
            time.sleep(0.02)
        process.send_signal(sig)
        time.sleep(0.2)
        gate.touch()  # the start goes on, then ends at once
        output, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, output
    assert "Traceback" not in output, output
    home = resolve_home(home_root)
    assert not home.discovery_file.exists() and not home.token_file.exists()
    last = (home.log_dir / "daemon.log").read_text(encoding="utf-8").splitlines()[-1]
    assert "Daemon stopped after" in last, last


def test_shutdown_through_the_api(daemon: DaemonProcess) -> None:
    response = httpx.post(
        f"{daemon.url}/api/v1/shutdown",
        headers={"Authorization": f"Bearer {daemon.token}"},
        trust_env=False,
    )
    assert response.status_code == 202
    assert daemon.process.wait(timeout=15) == 0
    assert _files_gone(daemon)


def test_shutdown_ends_open_streams(daemon: DaemonProcess) -> None:
    headers = {"Authorization": f"Bearer {daemon.token}"}
    with (
        httpx.Client(base_url=daemon.url, headers=headers, trust_env=False) as client,
        client.stream("GET", "/api/v1/hardware/samples/stream") as stream,
    ):
        client.post("/api/v1/shutdown")
        # The stream ends instead of holding the daemon open.
        for _ in stream.iter_lines():
            pass
    assert daemon.process.wait(timeout=10) == 0


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_kill_9_then_clean_restart(home_root: Path) -> None:
    first = start_daemon(home_root)
    first.process.kill()
    first.process.wait(timeout=10)
    stale = read_discovery(first.home.discovery_file)
    assert stale is not None and stale.pid == first.process.pid, "kill -9 leaves its file"

    status = roundhouse(home_root, "status", "--json", timeout=60)
    assert status.returncode == 3
    assert '"running": false' in status.stdout
    assert "ended without cleaning up" in status.stdout

    second = start_daemon(home_root)
    try:
        assert second.discovery.pid == second.process.pid != first.process.pid
        response = httpx.get(
            f"{second.url}/api/v1/status",
            headers={"Authorization": f"Bearer {second.token}"},
            trust_env=False,
        )
        assert response.json()["pid"] == second.process.pid
    finally:
        assert second.stop() == 0
