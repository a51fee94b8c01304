"""The `roundhouse` client commands against a real daemon, in JSON and as tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess
from tests.support.cli import roundhouse


def test_status_json_while_running(daemon: DaemonProcess) -> None:
    assert daemon.home.root is not None
    result = roundhouse(daemon.home.root, "status", "--json")
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["running"] is True
    assert status["pid"] == daemon.process.pid
    assert status["url"] == daemon.url
    assert status["version"]
    assert status["uptime_s"] >= 0


def test_hw_as_json_and_table(daemon: DaemonProcess) -> None:
    assert daemon.home.root is not None
    as_json = roundhouse(daemon.home.root, "hw", "--json")
    assert as_json.returncode == 0, as_json.stderr
    inventory = json.loads(as_json.stdout)
    assert inventory["cpu"]["logical_cores"] >= 1
    table = roundhouse(daemon.home.root, "hw")
    assert table.returncode == 0, table.stderr
    assert inventory["cpu"]["brand"][:20] in table.stdout
    assert "Recommended engines" in table.stdout
    assert inventory["recommendations"][0]["title"] in table.stdout


def test_stop_then_status(daemon: DaemonProcess) -> None:
    assert daemon.home.root is not None
    stopped = roundhouse(daemon.home.root, "stop", "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout) == {"stopped": True, "pid": daemon.process.pid}
    assert daemon.process.wait(timeout=10) == 0
    after = roundhouse(daemon.home.root, "status")
    assert after.returncode == 3
    assert "Not running" in after.stdout


def test_client_commands_without_a_daemon_fail_in_words(home_root: Path) -> None:
    for args in (("hw",), ("stop",), ("hw", "--json")):
        result = roundhouse(home_root, *args)
        assert result.returncode == 1
        assert "No Roundhouse daemon is running" in result.stderr
        assert "roundhouse serve" in result.stderr
        assert "Traceback" not in result.stderr


def test_invalid_settings_stop_serve_with_advice(home_root: Path) -> None:
    config = home_root / "config"
    config.mkdir(parents=True)
    (config / "settings.toml").write_text("[daemon]\nport = 'high'\n", encoding="utf-8")
    result = roundhouse(home_root, "serve", "--port", "0")
    assert result.returncode == 1
    assert "settings.toml" in result.stderr and "daemon.port" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11/Wayland check is Linux's")
def test_app_without_a_display_says_so(home_root: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)
    result = subprocess.run(
        [sys.executable, "-m", "roundhouse", "--home", str(home_root)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 1
    assert "No graphical session" in result.stderr
    assert "roundhouse serve" in result.stderr
    assert "Traceback" not in result.stderr
