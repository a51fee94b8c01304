"""Take the docs' screenshots under Xvfb, with trayer as the tray: run it with the venv python.

Needs (Debian): xvfb xauth trayer libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4
libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-shape0 libxcb-xkb1, plus the
offscreen set libgl1 libegl1 libxkbcommon0 libfontconfig1 libglib2.0-0 libdbus-1-3 and a font
(fonts-dejavu-core).

This file starts the display, the tray, the stand-ins and the daemon, and runs the steps in
order; each step (one page or window brought into a state worth showing) is in
screenshot_steps.py. `.venv/bin/python docs/take_screenshots.py` rewrites docs/screenshots/;
`--only settings-gateway.png` (one or more names) runs every step but rewrites only those;
`--theme dark` takes them in the dark theme, into docs/screenshots/dark/.
Keys and tokens on screen are masked while each screenshot is grabbed (screenshot_secrets.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

# The steps live beside this file (run as a script, its folder is on sys.path).
from screenshot_machines import PEER_NAME, start_peer, take_machines
from screenshot_offline import take_offline
from screenshot_pages_perf import take_bench, take_monitor
from screenshot_secrets import mask_secrets, restore, shown_secrets
from screenshot_steps import (
    PANEL_HEIGHT,
    REPO,
    SCREEN,
    start_hub_standin,
    start_served_model,
    take_attach_dialog,
    take_chat,
    take_first_run,
    take_install_progress,
    take_instances,
    take_models,
    take_ollama,
    take_quick_chat,
    take_settings,
    take_tray,
    wait_until,
)

if TYPE_CHECKING:
    from tests.fakes.hub import HubStandin
    from tests.fakes.ollama import OllamaStandin
    from tests.fakes.releases.server import ReleaseServer

OUT = Path(__file__).resolve().parent / "screenshots"
# Seconds of samples in the charts; a short CPU burst in the middle makes the curve readable.
HISTORY_S = 30.0


def start_xvfb() -> tuple[subprocess.Popen[bytes], str]:
    """Xvfb on a free display; the display number arrives on a pipe (-displayfd)."""
    read_fd, write_fd = os.pipe()
    width, height = SCREEN
    argv = ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", f"{width}x{height}x24"]
    process = subprocess.Popen([*argv, "-nolisten", "tcp"], pass_fds=(write_fd,))
    os.close(write_fd)
    # Xvfb writes the number and the newline separately: read up to the newline, or it may die.
    data = b""
    deadline = time.monotonic() + 15
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while not data.endswith(b"\n"):
            if time.monotonic() > deadline or not select.select([pipe], [], [], 1)[0]:
                if time.monotonic() > deadline:
                    process.kill()
                    raise RuntimeError("Xvfb did not report its display")
                continue
            chunk = pipe.read(16)
            if not chunk:
                raise RuntimeError(f"Xvfb exited with {process.wait()}")
            data += chunk
    return process, f":{data.decode().strip()}"


def start_trayer(display: str) -> subprocess.Popen[bytes]:
    argv = ["trayer", "--edge", "top", "--align", "right", "--widthtype", "percent"]
    argv += ["--width", "100", "--height", str(PANEL_HEIGHT), "--transparent", "false"]
    argv += ["--SetDockType", "true", "--expand", "true"]
    return subprocess.Popen(argv, env={**os.environ, "DISPLAY": display})


def find_llama_server() -> Path | None:
    """ROUNDHOUSE_LLAMA_SERVER, llama-server on PATH, or the tests' cached build."""
    found = os.environ.get("ROUNDHOUSE_LLAMA_SERVER") or shutil.which("llama-server")
    if found:
        return Path(found)
    sys.path.insert(0, str(REPO))
    from tests.engines.llama_server import find_llama_server as cached

    return cached()


def write_tiny_model(folder: Path) -> Path:
    """The tests' tiny random Llama: llama-server loads it in a second."""
    sys.path.insert(0, str(REPO))
    from tests.fixtures.models.tiny_llama import write_tiny_llama_gguf

    folder.mkdir(parents=True, exist_ok=True)
    return write_tiny_llama_gguf(folder / "tiny-llama-q8.gguf", seed=0)


def start_standins(tmp: Path) -> tuple[OllamaStandin, ReleaseServer]:
    """The Ollama stand-in serving as `ollama serve`, and the local llama.cpp release server
    (slowed down, so that a download can be caught half way)."""
    sys.path.insert(0, str(REPO))
    from tests.fakes.launchers import start_ollama_serve
    from tests.fakes.releases.server import ReleaseServer
    from tests.processes import free_port

    releases = ReleaseServer().__enter__()
    return start_ollama_serve(tmp / "ollama", free_port()), releases


def write_theme(root: Path, theme: str) -> None:
    """The daemon's settings choose the theme, as the Settings page would (`ui.theme`)."""
    from roundhouse.api.settings import Settings
    from roundhouse.base.paths import resolve_home
    from roundhouse.core.infra.settings import save_settings

    settings_file = resolve_home(root).settings_file
    settings_file.parent.mkdir(parents=True, exist_ok=True)
    save_settings(settings_file, Settings.model_validate({"ui": {"theme": theme}}))


def start_daemon(
    root: Path, llama_server: Path | None, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    from roundhouse.api.discovery import read_discovery
    from roundhouse.base.paths import resolve_home

    argv = [sys.executable, "-m", "roundhouse", "--home", str(root), "serve", "--port", "0"]
    env = {**os.environ, **(extra_env or {})}
    if llama_server is not None:
        env["PATH"] = f"{llama_server.parent}{os.pathsep}{env.get('PATH', '')}"
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=env)
    discovery = resolve_home(root).discovery_file
    deadline = time.monotonic() + 30
    while (found := read_discovery(discovery)) is None or found.pid != process.pid:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("the daemon did not start")
        time.sleep(0.1)
    return process


def burn_cpu(seconds: float) -> subprocess.Popen[bytes]:
    code = f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass"
    return subprocess.Popen([sys.executable, "-c", code])


async def take(
    root: Path,
    daemon: subprocess.Popen[bytes],
    model: Path | None,
    releases: ReleaseServer,
    hub: HubStandin,
    only: frozenset[str],
    peer_root: Path | None,
    out: Path,
) -> list[Path]:
    from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

    from roundhouse.base.paths import resolve_home
    from roundhouse.client import DaemonClient
    from roundhouse.gui.app import build_ui, shutdown
    from roundhouse.gui.daemon_bridge import ConnectionState
    from roundhouse.gui.pages.engines_page import EnginesPage

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    await wait_until(QSystemTrayIcon.isSystemTrayAvailable, 10, "trayer's tray")
    # A plain backdrop below the panel: the bare X root window is black.
    backdrop = QWidget()
    backdrop.setStyleSheet("background: #51606c;")
    backdrop.setGeometry(0, PANEL_HEIGHT, SCREEN[0], SCREEN[1] - PANEL_HEIGHT)
    backdrop.show()
    ui = build_ui(app, resolve_home(root), auto_start=False, geometry_store=None)
    ui.window.setGeometry(36, PANEL_HEIGHT + 24, 1328, 820)
    ui.window.show()
    assert ui.tray is not None, "no tray although trayer runs"
    ui.tray.show()
    ui.bridge.start()
    await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "the daemon")
    await asyncio.sleep(0.5)
    screen = app.primaryScreen()
    saved: list[Path] = []

    def grab(name: str, window_only: bool = True, widget: QWidget | None = None) -> None:
        if only and name not in only:
            return
        windows = app.topLevelWidgets()
        masked = mask_secrets(windows)
        try:
            # The masks painted before the screen is read: repaint() paints at once, where
            # processEvents() here, inside the step's task, would let qasync step another
            # task (the bridge's instance poller) and kill it ("Cannot enter into task").
            for window in windows:
                if window.isVisible():
                    window.repaint()
            if leaks := shown_secrets(windows):
                raise RuntimeError(f"a key would show in {name}: {leaks}")
            geometry = (widget or ui.window).frameGeometry()
            if window_only:
                pixmap = screen.grabWindow(0, geometry.x(), geometry.y(), geometry.width(),
                                           geometry.height())  # fmt: skip
            else:
                pixmap = screen.grabWindow(0)
        finally:
            restore(masked)
        path = out / name
        if not pixmap.save(str(path)):
            raise RuntimeError(f"could not save {path}")
        saved.append(path)

    grab("hardware.png")

    # The engines, with where one missing engine was looked for folded out.
    await wait_until(lambda: ui.bridge.engines is not None, 20, "the engines")
    page = ui.window.show_page("Engines")
    assert isinstance(page, EnginesPage)
    missing = [c for c in page.cards.values() if c.looked_in_button.isVisible()]
    if missing:
        missing[0].looked_in_button.click()
    await asyncio.sleep(0.5)
    grab("engines.png")
    # The chat's instance serves on until the tray has been shown with it.
    served: tuple[str, str] | None = None
    if model is not None:
        await take_instances(ui, page, model, grab)
        served = await start_served_model(ui, model)
        await take_chat(ui, served[1], grab)
        await take_quick_chat(ui, served[1], grab)
        await take_monitor(ui, served[1], grab)
        await take_bench(ui, served[1], grab)
        if peer_root is not None:
            await take_machines(ui, peer_root, model, grab)
    await take_attach_dialog(ui, page, grab)
    await take_ollama(ui, grab)
    await take_models(ui, hub, grab)
    await take_first_run(ui, hub, grab)
    await take_settings(ui, grab)
    await take_install_progress(ui, page, releases, grab)
    await take_tray(ui, grab, serving=served is not None)
    # Last of the steps that need the Hub: it stops the Hub stand-in.
    await take_offline(ui, hub, grab)
    if served is not None:
        async with DaemonClient.for_home(ui.bridge.home) as client:
            await client.stop_instance(served[0])

    ui.quitter.request_quit()
    await asyncio.sleep(0.6)
    grab("quit-question.png")
    if ui.quitter.dialog is not None:
        ui.quitter.dialog.reject()
    await asyncio.sleep(0.3)

    # The banner: the daemon goes away, the window stays and says so.
    daemon.terminate()
    daemon.wait(15)
    await wait_until(lambda: "No Roundhouse daemon" in ui.bridge.message, 20, "the banner")
    await asyncio.sleep(0.6)
    grab("not-connected.png")
    await shutdown(ui)
    return saved


def main() -> int:
    parser = argparse.ArgumentParser(description="Take the docs' screenshots under Xvfb.")
    parser.add_argument(
        "--only", nargs="+", default=[], metavar="NAME.png", help="rewrite only these files"
    )
    parser.add_argument(
        "--theme", choices=("light", "dark"), default="light", help="the theme to take them in"
    )
    arguments = parser.parse_args()
    only = frozenset(arguments.only)
    out = OUT if arguments.theme == "light" else OUT / arguments.theme
    out.mkdir(parents=True, exist_ok=True)
    xvfb, display = start_xvfb()
    os.environ.update(DISPLAY=display, QT_QPA_PLATFORM="xcb")
    os.environ.pop("WAYLAND_DISPLAY", None)
    trayer = start_trayer(display)
    burner: subprocess.Popen[bytes] | None = None
    daemon: subprocess.Popen[bytes] | None = None
    peer: subprocess.Popen[bytes] | None = None
    ollama: OllamaStandin | None = None
    releases: ReleaseServer | None = None
    hub: HubStandin | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="roundhouse-shots-") as tmp:
            root = Path(tmp) / "home"
            write_theme(root, arguments.theme)
            llama_server = find_llama_server()
            model = write_tiny_model(Path(tmp) / "models") if llama_server else None
            if llama_server is None:
                print("no llama-server found: the instance screenshots are left out")
            ollama, releases = start_standins(Path(tmp))
            hub, hub_environment = start_hub_standin(Path(tmp))
            env = {
                "OLLAMA_HOST": f"127.0.0.1:{ollama.port}",
                "ROUNDHOUSE_LLAMACPP_RELEASES_URL": releases.releases_url,
                # The gateway key the settings step generates goes to a file, not the user's
                # keyring; a login entry, were one written, to the temp folder.
                "PYTHONPATH": str(REPO),
                "PYTHON_KEYRING_BACKEND": "tests.fakes.keyring_backend.FileKeyring",
                "ROUNDHOUSE_TEST_KEYRING": str(Path(tmp) / "keyring.json"),
                "XDG_CONFIG_HOME": str(Path(tmp) / "config"),
                # Hugging Face is the local Hub stand-in; downloads go to the temp folder.
                **hub_environment,
            }
            daemon = start_daemon(root, llama_server, env)
            if llama_server is not None and model is not None:
                # A second machine for the Machines page: another daemon on loopback.
                peer = start_peer(Path(tmp), model, env, start_daemon, llama_server)
            # History for the charts: quiet, a burst of load, quiet again.
            time.sleep(HISTORY_S / 3)
            burner = burn_cpu(HISTORY_S / 3)
            time.sleep(HISTORY_S * 2 / 3)

            from roundhouse.gui.app import application
            from roundhouse.gui.event_loop import GuiEventLoop, install_asyncgen_hooks

            app = application()
            loop = GuiEventLoop(app)
            asyncio.set_event_loop(loop)
            restore_hooks = install_asyncgen_hooks(loop)
            try:
                peer_root = Path(tmp) / PEER_NAME if peer is not None else None
                saved = loop.run_until_complete(
                    take(root, daemon, model, releases, hub, only, peer_root, out)
                )
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                restore_hooks()
                asyncio.set_event_loop(None)
                loop.close()
    finally:
        for process in (burner, peer, daemon, trayer, xvfb):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(15)
        if ollama is not None:
            ollama.stop()
        if releases is not None:
            releases.__exit__(None, None, None)
        if hub is not None:
            hub.stop()
    for path in saved:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
