"""`pip install roundhouse` on a server: the built wheel into a fresh virtual environment,
which then holds no Qt package, and `roundhouse serve` there with no display and no keyring
(ADR 35). The dependencies come from the package index pip is configured with; where there is
none the test is skipped with the reason (in CI it fails)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
import venv
from pathlib import Path

import httpx
import pytest

from roundhouse.api.discovery import read_discovery
from roundhouse.base.paths import resolve_home
from tests.engines.fixtures import running_in_ci
from tests.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
QT = ("PySide6", "shiboken6", "pyqtgraph", "qasync")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a Linux or macOS server")


def _install(tmp_path: Path) -> Path:
    """A fresh venv holding the wheel of this checkout and its required dependencies."""
    wheels = tmp_path / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    subprocess.run([*build, "-w", str(wheels), str(ROOT)], check=True, timeout=300)
    (wheel,) = wheels.glob("roundhouse-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        message = f"pip could not install roundhouse's dependencies here (no index?): {why}"
        if running_in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return python


@pytest.mark.timeout(1200)
def test_pip_install_serves_without_qt_a_display_or_a_keyring(tmp_path: Path) -> None:
    python = _install(tmp_path)
    found = subprocess.run(
        [
            str(python),
            "-c",
            f"import importlib.util as u; print([n for n in {QT!r} if u.find_spec(n)])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert found.stdout.strip() == "[]", "a plain install brought Qt"

    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "PYTHONPATH"}
    }
    env |= {
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
    }
    command = [str(python.parent / "roundhouse"), "--home", str(tmp_path / "home")]
    home = resolve_home(tmp_path / "home")
    # From tmp_path, not the checkout: the venv's own copy is what runs.
    server = subprocess.Popen(
        [*command, "serve", "--port", "0"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while (discovery := read_discovery(home.discovery_file)) is None:
            assert server.poll() is None, server.stdout.read() if server.stdout else ""
            assert time.monotonic() < deadline, "the daemon did not start"
            time.sleep(0.1)

        def roundhouse(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*command, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
            )

        generated = roundhouse("gateway", "key", "--generate")
        assert generated.returncode == 0, generated.stderr
        key = next(line for line in generated.stdout.splitlines() if line.startswith("rh-"))
        secrets_file = home.config_dir / "secrets.json"
        assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
        models = httpx.get(
            discovery.url + "/v1/models",
            headers={"authorization": f"Bearer {key}"},
            trust_env=False,
            timeout=10,
        )
        assert models.status_code == 200, models.text

        app = roundhouse()
        assert app.returncode != 0 and "roundhouse[gui]" in app.stderr, app.stderr
        assert roundhouse("stop").returncode == 0
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
