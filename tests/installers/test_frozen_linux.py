"""The frozen Linux build, unpacked from its tarball and run as a user would run it.

One build per session (tests/installers/frozen_build.py, cached by its inputs); the app is
unpacked into a folder whose name has a space and non-ASCII letters, as users' folders do.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

import roundhouse
from roundhouse.api.discovery import read_discovery
from roundhouse.base.paths import resolve_home
from tests.engines.fixtures import running_in_ci
from tests.installers.frozen_build import (
    ROOT,
    FrozenBuildError,
    frozen_tarball,
    pyinstaller_missing,
)

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux build"),
    # The first test to ask for the app waits for the build (a minute or two, once).
    pytest.mark.timeout(1200),
]


@pytest.fixture(scope="module")
def tarball() -> Path:
    if pyinstaller_missing():
        message = "PyInstaller is not installed: .venv/bin/pip install -e '.[dev]'"
        if running_in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    try:
        return frozen_tarball()
    except FrozenBuildError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="module")
def app_dir(tarball: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The unpacked app folder; whatever still runs from it at the end is killed."""
    apps = tmp_path_factory.mktemp("my apps ü")
    with tarfile.open(tarball) as tar:
        tar.extractall(apps, filter="data")
    folder = apps / tarball.name.removesuffix(".tar.gz")
    yield folder
    for proc in running_from(folder):
        proc.kill()


def running_from(folder: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["exe"]):
        exe = proc.info["exe"]
        if exe and Path(exe).is_relative_to(folder) and proc.status() != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def assert_nothing_runs_from(folder: Path, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while (left := running_from(folder)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == [], f"left running: {[p.cmdline() for p in left]}"


def run_app(
    app_dir: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(app_dir / "roundhouse"), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        timeout=timeout,
    )


def wait_for_daemon(root: Path, timeout_s: float = 30.0) -> int:
    """The pid of the daemon serving `root`, once its discovery file names it."""
    home = resolve_home(root)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = read_discovery(home.discovery_file)
        if found is not None and home.token_file.exists():
            return found.pid
        time.sleep(0.1)
    raise AssertionError(f"no daemon wrote {home.discovery_file} in {timeout_s:g} s")


def desktop_entry(text: str) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return dict(parser["Desktop Entry"])


def test_tarball_holds_app_desktop_entry_icons_and_scripts(tarball: Path) -> None:
    top = tarball.name.removesuffix(".tar.gz")
    assert top == f"roundhouse-{roundhouse.__version__}-linux-{os.uname().machine}"
    with tarfile.open(tarball) as tar:
        members = {m.name: m for m in tar.getmembers()}
        desktop = tar.extractfile(f"{top}/roundhouse.desktop")
        assert desktop is not None
        entry = desktop_entry(desktop.read().decode())
    for name in ("roundhouse", "install.sh", "uninstall.sh"):
        assert members[f"{top}/{name}"].mode & 0o111, f"{name} is not executable"
    assert f"{top}/icons/roundhouse-256.png" in members
    assert f"{top}/icons/roundhouse.svg" in members
    resources = f"{top}/_internal/roundhouse/resources"
    for data in (
        "engines/catalog.toml",
        "engines/pins/mlx/linux-x86_64.txt",
        "engines/guard/sitecustomize.py",
        "styles/app.qss",
        "icons/tray-dark-serving.svg",
        # Lucide's icons ship with their licence beside them.
        "icons/ui/cpu.svg",
        "icons/ui/LICENSE",
    ):
        assert f"{resources}/{data}" in members, data
    # Frozen from the build's lock, not from whatever the test's Python has installed.
    lock = (ROOT / "installers" / "requirements.lock").read_text(encoding="utf-8")
    keyring = re.search(r"^keyring==(\S+)", lock, re.MULTILINE)
    assert keyring is not None
    assert f"{top}/_internal/keyring-{keyring.group(1)}.dist-info/METADATA" in members
    assert entry["Exec"] and entry["Icon"] == "roundhouse"
    assert "Development" in entry["Categories"].split(";")
    assert entry["StartupWMClass"] == "Roundhouse"  # Qt's WM_CLASS: the application name
    # Reproducible: no build machine's owner or clock; no GPU library nor test code inside.
    assert {(m.uid, m.gid, m.mtime) for m in members.values()} == {(0, 0, members[top].mtime)}
    assert not [n for n in members if "/libcuda" in n or "/libnvidia" in n or "/tests/" in n]


def test_version(app_dir: Path) -> None:
    done = run_app(app_dir, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"roundhouse, version {roundhouse.__version__}"


def test_window_opens_offscreen_and_quits(app_dir: Path, tmp_path: Path) -> None:
    env = {"QT_QPA_PLATFORM": "offscreen", "ROUNDHOUSE_SMOKE_TEST": "1"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")  # the window's geometry goes here
    done = run_app(app_dir, "--home", str(tmp_path / "home"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "smoke: first paint"
    resources = app_dir / "_internal" / "roundhouse" / "resources"
    # The app's icon, 8 tray icons, and the 9 sidebar icons in each of the two themes.
    assert lines[1] == f"smoke: ok: 27 icons and the stylesheet from {resources}"
    assert not (tmp_path / "home" / "state").exists()  # the smoke test starts no daemon


def test_daemon_serves_reads_its_catalog_and_stops(app_dir: Path, tmp_path: Path) -> None:
    root = tmp_path / "дом home"
    server = subprocess.Popen(
        [str(app_dir / "roundhouse"), "--home", str(root), "serve", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for_daemon(root) == server.pid
        status = run_app(app_dir, "--home", str(root), "status")
        assert status.returncode == 0 and "Running" in status.stdout, status.stdout
        listed = run_app(app_dir, "--home", str(root), "engines", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        # The engine catalog is a resource file: found in the bundle, every engine listed.
        engines = {e["id"] for e in json.loads(listed.stdout)["catalog"]["engines"]}
        assert {"llama.cpp", "ollama", "mlx", "vllm", "sglang"} <= engines
        stopped = run_app(app_dir, "--home", str(root), "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
    assert_nothing_runs_from(app_dir)


def test_engine_gets_the_users_library_path_not_the_bundles(
    app_dir: Path, tmp_path: Path, llama_server_binary: Path, tiny_gguf: Path
) -> None:
    root = tmp_path / "home"
    path = f"{llama_server_binary.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    user_env = {**os.environ, "PATH": path, "LD_LIBRARY_PATH": str(tmp_path / "user-libs")}
    server = subprocess.Popen(
        [str(app_dir / "roundhouse"), "--home", str(root), "serve", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=user_env,
    )
    try:
        wait_for_daemon(root)
        args = ("engines", "start", "llama.cpp", "-m", str(tiny_gguf), "-c", "512", "-np", "1")
        started = run_app(app_dir, "--home", str(root), *args, "--json", timeout=120)
        assert started.returncode == 0, started.stdout + started.stderr
        engine_pid = json.loads(started.stdout)["pid"]
        environ = psutil.Process(engine_pid).environ()
        # The engine sees the user's LD_LIBRARY_PATH and none of the bootloader's variables.
        assert environ.get("LD_LIBRARY_PATH") == str(tmp_path / "user-libs")
        assert not [name for name in environ if name.startswith("_PYI_")]
        assert run_app(app_dir, "--home", str(root), "stop", timeout=90).returncode == 0
        server.wait(timeout=30)
        assert not psutil.pid_exists(engine_pid) or psutil.Process(engine_pid).status() == (
            psutil.STATUS_ZOMBIE
        )
    finally:
        if server.poll() is None:
            server.kill()
    assert_nothing_runs_from(app_dir)


def test_app_starts_its_daemon_from_the_same_binary(app_dir: Path, tmp_path: Path) -> None:
    root = tmp_path / "home"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    app = subprocess.Popen(
        [str(app_dir / "roundhouse"), "--home", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        daemon_pid = wait_for_daemon(root, timeout_s=60)
        daemon = psutil.Process(daemon_pid)
        assert daemon_pid != app.pid
        assert daemon.cmdline() == [str(app_dir / "roundhouse"), "--home", str(root), "serve"]
        # Quitting the app (a plain kill quits like the menu) leaves the daemon serving.
        app.send_signal(signal.SIGTERM)
        assert app.wait(timeout=30) == 0
        assert run_app(app_dir, "--home", str(root), "status").returncode == 0
        assert run_app(app_dir, "--home", str(root), "stop").returncode == 0
    finally:
        if app.poll() is None:
            app.kill()
    assert_nothing_runs_from(app_dir)


def test_install_adds_a_menu_entry_and_uninstall_stops_the_daemon_first(
    app_dir: Path, tmp_path: Path
) -> None:
    user_home = tmp_path / "user"
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(HOME=str(user_home), ROUNDHOUSE_HOME=str(tmp_path / "rh"))
    installed = subprocess.run(
        [str(app_dir / "install.sh")], capture_output=True, text=True, env=env, timeout=60
    )
    assert installed.returncode == 0, installed.stderr
    share = user_home / ".local" / "share"
    entry = desktop_entry((share / "applications" / "roundhouse.desktop").read_text())
    # The Exec key quotes the path (it has a space); shlex reads the same quoting rules.
    argv = shlex.split(entry["Exec"].replace("\\\\", "\\"))
    assert argv == [str(app_dir / "roundhouse")]
    assert subprocess.run([*argv, "--version"], env=env, timeout=60).returncode == 0
    assert (share / "icons/hicolor/256x256/apps/roundhouse.png").is_file()
    assert (share / "icons/hicolor/scalable/apps/roundhouse.svg").is_file()
    link = user_home / ".local" / "bin" / "roundhouse"
    assert link.resolve() == (app_dir / "roundhouse").resolve()

    autostart = user_home / ".config" / "autostart" / "roundhouse.desktop"
    autostart.parent.mkdir(parents=True)
    autostart.write_text("[Desktop Entry]\nX-Roundhouse-Autostart=true\n")
    server = subprocess.Popen(
        [str(app_dir / "roundhouse"), "serve", "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_daemon(tmp_path / "rh")
        removed = subprocess.run(
            [str(app_dir / "uninstall.sh")], capture_output=True, text=True, env=env, timeout=90
        )
        assert removed.returncode == 0, removed.stderr
        assert server.wait(timeout=30) == 0  # stopped by uninstall.sh, not killed
    finally:
        if server.poll() is None:
            server.kill()
    assert not (share / "applications" / "roundhouse.desktop").exists()
    assert not list((share / "icons").rglob("roundhouse.*"))
    assert not link.is_symlink() and not autostart.exists()
    assert_nothing_runs_from(app_dir)
