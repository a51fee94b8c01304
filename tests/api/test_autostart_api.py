"""Start at login through the settings API of a real daemon: the XDG entry it writes (in a
temp XDG_CONFIG_HOME, never the user's), removed when turned off, and a failure in words."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import httpx
import pytest

from roundhouse.api.daemon import Problem
from roundhouse.core.system.autostart import DESKTOP_FILE
from tests.daemon_process import DaemonProcess, running_daemon

pytestmark = pytest.mark.skipif(
    sys.platform in ("win32", "darwin"), reason="the daemon writes the XDG entry on Linux"
)


def _client(daemon: DaemonProcess) -> httpx.Client:
    headers = {"Authorization": f"Bearer {daemon.token}"}
    return httpx.Client(base_url=daemon.url, headers=headers, timeout=10, trust_env=False)


def _put_start_at_login(client: httpx.Client, on: bool) -> httpx.Response:
    settings = client.get("/api/v1/settings").json()
    settings["ui"]["start_at_login"] = on
    return client.put("/api/v1/settings", json=settings)


def test_turning_it_on_writes_the_entry_and_off_removes_it(home_root: Path, tmp_path: Path) -> None:
    config = tmp_path / "xdg config"
    entry = config / "autostart" / DESKTOP_FILE
    env = {"XDG_CONFIG_HOME": str(config)}
    with running_daemon(home_root, env=env) as daemon, _client(daemon) as client:
        assert _put_start_at_login(client, True).status_code == 200
        assert entry.is_file()
        exec_line = next(
            line.removeprefix("Exec=")
            for line in entry.read_text(encoding="utf-8").splitlines()
            if line.startswith("Exec=")
        )
        argv = shlex.split(exec_line.replace("\\\\", "\\").replace("%%", "%"))
        # This home's app, in the tray, with the daemon's own interpreter.
        assert argv[1:] == ["-m", "roundhouse", "--home", str(home_root), "--tray"]
        assert Path(argv[0]).name.startswith("python")
        assert client.get("/api/v1/settings").json()["ui"]["start_at_login"] is True

        assert _put_start_at_login(client, False).status_code == 200
        assert not entry.exists()
        assert list((config / "autostart").iterdir()) == []
        # Saving other settings while it is off touches nothing there, not even a file of
        # that name the user made by hand.
        entry.write_text("[Desktop Entry]\n", encoding="utf-8")
        assert _put_start_at_login(client, False).status_code == 200
        assert entry.read_text(encoding="utf-8") == "[Desktop Entry]\n"


def test_a_failure_is_refused_in_words_and_not_saved(home_root: Path, tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    # A file where the autostart folder belongs: the entry cannot be written.
    (config / "autostart").write_text("in the way", encoding="utf-8")
    env = {"XDG_CONFIG_HOME": str(config)}
    with running_daemon(home_root, env=env) as daemon, _client(daemon) as client:
        refused = _put_start_at_login(client, True)
        assert refused.status_code == 500
        problem = Problem.model_validate_json(refused.content)
        assert problem.title == "Start at login was not changed"
        assert str(config / "autostart" / DESKTOP_FILE) in problem.detail
        assert client.get("/api/v1/settings").json()["ui"]["start_at_login"] is False
