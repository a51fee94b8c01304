"""A headless Linux server: no Qt packages, no display, no keyring service (ADR 35).

`roundhouse serve` runs as a process of its own with Qt made unimportable (the no_qt
sitecustomize), DISPLAY and WAYLAND_DISPLAY unset and keyring's fail backend, which is what
keyring picks where no Secret Service runs. The gateway key is set from the CLI, kept in a
file only the user can read, served with on a second listener, and read back after a restart.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.daemon_process import DaemonProcess, running_daemon
from tests.processes import free_port
from tests.support import cli

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="a headless Linux server, /proc"
)

LOOPBACK = "127.0.0.1"
DISPLAY_LIBRARY = re.compile(r"/(lib(?:Qt6\w*|X11|xcb[\w-]*|EGL|GL|GLX|wayland-\w+)\.so)")
NO_QT = Path(__file__).resolve().parents[1] / "fakes" / "no_qt"


@pytest.fixture
def headless(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of a server: no display, no keyring, no Qt (each import tried is
    logged to tries.log)."""
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "ROUNDHOUSE_SECRETS"):
        monkeypatch.delenv(name, raising=False)
    path = os.pathsep.join(p for p in (str(NO_QT), os.environ.get("PYTHONPATH", "")) if p)
    return {
        "PYTHONPATH": path,
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "ROUNDHOUSE_TEST_QT_TRIES": str(tmp_path / "tries.log"),
        # No Ollama of the machine's own is looked at.
        "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
    }


def models_status(url: str, key: str | None) -> int:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return httpx.get(url + "/v1/models", headers=headers, trust_env=False, timeout=10).status_code


def listening(url: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            httpx.get(url + "/v1/models", trust_env=False, timeout=2)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def display_libraries(pid: int) -> set[str]:
    """The display and Qt libraries mapped into a process (none on a server)."""
    maps = Path(f"/proc/{pid}/maps").read_text(encoding="utf-8")
    return set(DISPLAY_LIBRARY.findall(maps))


def run(daemon: DaemonProcess, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    done = cli.roundhouse(daemon, *args, env=env, timeout=60)
    return done.returncode, done.stdout, done.stderr


def test_serve_and_a_gateway_key_on_a_headless_server(
    tmp_path: Path, headless: dict[str, str]
) -> None:
    tries = Path(headless["ROUNDHOUSE_TEST_QT_TRIES"])
    home = tmp_path / "home"
    secrets_file = home / "config" / "secrets.json"
    port = free_port()
    second = f"http://127.0.0.1:{port}"
    with running_daemon(home, env=headless) as daemon:
        code, out, err = run(daemon, headless, "status")
        assert code == 0 and "Running" in out, err

        code, out, err = run(daemon, headless, "gateway", "key", "--generate")
        assert code == 0, err
        key = next(line for line in out.splitlines() if line.startswith("rh-"))
        assert "a file only you can read" in " ".join(out.split())
        assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
        assert json.loads(secrets_file.read_text(encoding="utf-8")) == {"gateway:api-key": key}
        assert models_status(daemon.url, None) == 401 and models_status(daemon.url, key) == 200

        # The gateway beyond the daemon's own address, which needs the key: it listens now.
        for name, value in (("gateway.listen_port", str(port)), ("gateway.listen_host", LOOPBACK)):
            code, _, err = run(daemon, headless, "settings", "set", name, value)
            assert code == 0, err
        listening(second)
        assert models_status(second, None) == 401 and models_status(second, key) == 200
        code, out, _ = run(daemon, headless, "gateway", "status", "--json")
        shown = json.loads(out)
        assert shown["key_set"] is True and str(secrets_file) in shown["key_kept_in"]
        assert all(listener["error"] is None for listener in shown["listeners"])
        # Serving, with a key and two listeners, it has loaded no display library.
        assert display_libraries(daemon.process.pid) == set()

    # A restart reads the key back from the file: the second listener serves with it again.
    with running_daemon(home, env=headless) as daemon:
        listening(second)
        assert models_status(second, None) == 401 and models_status(second, key) == 200
        assert models_status(daemon.url, key) == 200
        # The other commands need no Qt either.
        for command in (["--help"], ["hw"], ["engines"], ["settings", "show"], ["chats", "list"]):
            code, _, err = run(daemon, headless, *command)
            assert code == 0, (command, err)
        assert not tries.exists(), f"the daemon or a command reached for Qt: {tries.read_text()}"

        # Cleared, it leaves the file: /v1 on loopback answers without a key again.
        code, _, err = run(daemon, headless, "gateway", "key", "--clear")
        assert code == 0, err
        assert json.loads(secrets_file.read_text(encoding="utf-8")) == {}
        assert models_status(daemon.url, None) == 200

    # The app itself needs Qt: a plain `roundhouse` says in one sentence how to get it.
    app = cli.roundhouse(home, env=headless, timeout=60)
    said = " ".join(app.stderr.split())
    assert app.returncode != 0 and "Traceback" not in app.stderr
    assert "roundhouse[gui]" in said and said.count(". ") == 0, said
    assert tries.exists(), "the no-Qt stand-in was not in effect"
    tray = cli.roundhouse(home, "--tray", env=headless, timeout=60)
    assert tray.returncode != 0 and "roundhouse[gui]" in tray.stderr
