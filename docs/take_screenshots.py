"""Take the docs' screenshots under Xvfb, with trayer as the tray: run it with the venv python.

Needs (Debian): xvfb xauth trayer libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4
libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-shape0 libxcb-xkb1, plus the
offscreen set libgl1 libegl1 libxkbcommon0 libfontconfig1 libglib2.0-0 libdbus-1-3 and a font
(fonts-dejavu-core).
"""

from __future__ import annotations

import asyncio
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.fakes.ollama import OllamaStandin
    from tests.fakes.releases.server import ReleaseServer

    from roundhouse.gui.app import Ui
    from roundhouse.gui.pages.engines_page import EnginesPage

REPO = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "screenshots"
SCREEN = (1400, 900)
PANEL_HEIGHT = 28
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


async def wait_until(predicate: Callable[[], bool], within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


def burn_cpu(seconds: float) -> subprocess.Popen[bytes]:
    code = f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass"
    return subprocess.Popen([sys.executable, "-c", code])


async def take(
    root: Path, daemon: subprocess.Popen[bytes], model: Path | None, releases: ReleaseServer
) -> list[Path]:
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

    from roundhouse.base.paths import resolve_home
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
        geometry = (widget or ui.window).frameGeometry()
        if window_only:
            pixmap = screen.grabWindow(0, geometry.x(), geometry.y(), geometry.width(),
                                       geometry.height())  # fmt: skip
        else:
            pixmap = screen.grabWindow(0)
        path = OUT / name
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
    if model is not None:
        await take_instances(ui, page, model, grab)
        await take_chat(ui, model, grab)
    await take_attach_dialog(ui, page, grab)
    await take_ollama(ui, grab)
    await take_settings(ui, grab)
    await take_install_progress(ui, page, releases, grab)
    ui.window.show_page("Hardware")
    await asyncio.sleep(0.3)
    grab("desktop-with-tray.png", window_only=False)

    ui.tray.menu.popup(QPoint(SCREEN[0] - 260, PANEL_HEIGHT + 2))
    await asyncio.sleep(0.6)
    grab("tray-menu.png", window_only=False)
    ui.tray.menu.hide()

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


async def take_instances(ui: Ui, page: EnginesPage, model: Path, grab: Callable[..., None]) -> None:
    """The start dialog, a running llama-server in the table, and its live log."""
    from roundhouse.api.engines import EngineId

    dialog = page.open_start_dialog(EngineId.LLAMA_CPP)
    dialog.model_edit.setText(str(model))
    dialog.ctx_size.setValue(4096)
    dialog.parallel.setValue(2)
    dialog.gpu_layers_choice.setCurrentIndex(dialog.gpu_layers_choice.findText("auto"))
    dialog.flash_attn.setCurrentIndex(dialog.flash_attn.findText("auto"))
    # The tiny model's heads (16 wide) cannot take a q8_0 cache: f16 it is.
    dialog.cache_type_k.setCurrentText("f16")
    dialog.cache_type_v.setCurrentText("f16")
    dialog.advanced_button.setChecked(True)
    dialog.extra_args.setText("--seed 42")
    dialog.save_preset_as("4k context, 2 slots")
    await wait_until(lambda: bool(dialog.preset_names()), 10, "the saved preset")
    await asyncio.sleep(0.8)
    grab("start-dialog.png", widget=dialog)
    dialog.start()
    await wait_until(lambda: page.start_dialog is None, 20, "the start")
    section = page.instances

    def ready() -> bool:
        status = section.row_texts()[0]["Status"] if section.row_texts() else ""
        if status.startswith("failed"):
            raise RuntimeError(f"the instance {status}")
        return status == "ready"

    await wait_until(ready, 60, "a ready instance")
    await asyncio.sleep(2.5)  # an uptime of a few seconds, the memory measured
    grab("engines-instances.png")
    logs = section.open_logs_of_selected()
    assert logs is not None
    logs.resize(1000, 620)
    logs.move(ui.window.x() + 160, ui.window.y() + 120)
    await wait_until(lambda: len(logs.lines()) > 10, 20, "log lines")
    await asyncio.sleep(1.0)
    grab("engine-logs.png", widget=logs)
    logs.close()
    await take_metrics(ui, page, grab)
    info = section.selected()
    assert info is not None
    section.stop_selected()
    try:
        await wait_until(lambda: section.model.row_of(info.id) is None, 60, "the stop")
    except RuntimeError as exc:
        raise RuntimeError(f"{exc}: {section.message_label.text()} {section.row_texts()}") from exc


EXAMPLE_REPLY = """Start it as a child process and wait for its health check:

```python
import subprocess

server = subprocess.Popen(
    ["llama-server", "-m", "model.gguf", "--port", "8080", "-c", "4096"]
)
```

Then poll `http://127.0.0.1:8080/health` until it answers **200**; never sleep a fixed time.
"""


async def take_chat(ui: Ui, model: Path, grab: Callable[..., None]) -> None:
    """The Chat page: an example exchange (Markdown, code, folded reasoning), then a live
    reply from the tiny model with its figures."""
    from roundhouse.api.chat import NewConversation, NewMessage, Role
    from roundhouse.api.engines import EngineId, InstanceOptions
    from roundhouse.api.instances import InstanceStatus, StartRequest
    from roundhouse.client import DaemonClient
    from roundhouse.gui.pages.chat_page import ChatPage

    async with DaemonClient.for_home(ui.bridge.home) as client:
        options = InstanceOptions(model=str(model), ctx_size=2048, parallel=1)
        info = await client.start_instance(StartRequest(engine=EngineId.LLAMA_CPP, options=options))
        deadline = time.monotonic() + 60
        while info.status != InstanceStatus.READY:
            if info.status == InstanceStatus.FAILED or time.monotonic() > deadline:
                raise RuntimeError(f"the chat's instance did not start: {info.error}")
            await asyncio.sleep(0.2)
            info = await client.instance(info.id)
        example = [
            NewMessage(role=Role.USER, content="How do I start llama-server from Python?"),
            NewMessage(
                role=Role.ASSISTANT,
                content=EXAMPLE_REPLY,
                reasoning="The user wants a subprocess; mention the health check.",
            ),
        ]
        new = NewConversation(title="llama-server from Python", model=info.models[0])
        chat = await client.create_chat(new.model_copy(update={"messages": example}))
    page = ui.window.show_page("Chat")
    assert isinstance(page, ChatPage)
    page.refresh()
    await wait_until(lambda: chat.id in page.conversations.ids(), 10, "the conversation")
    page.open_conversation(chat.id)
    await wait_until(lambda: len(page.transcript.messages) == 2, 10, "its messages")
    page.settings.max_tokens.setValue(40)
    page.input.setPlainText("And the same with a 2048-token context?")
    page.send()
    await wait_until(lambda: len(page.transcript.messages) == 4 and not page.busy, 60, "a reply")
    page.input.setPlainText("Thanks! Which port does the gateway use?")
    await asyncio.sleep(0.8)
    grab("chat.png")
    async with DaemonClient.for_home(ui.bridge.home) as client:
        await client.stop_instance(info.id)


async def take_metrics(ui: Ui, page: EnginesPage, grab: Callable[..., None]) -> None:
    """The running llama-server's own metrics, after it answered a few requests."""
    import httpx

    section = page.instances
    info = section.selected()
    assert info is not None
    async with httpx.AsyncClient(base_url=info.base_url, timeout=30) as engine:
        for prompt in ("Hello", "Tell me about trains", "What is a roundhouse?"):
            body = {"model": "x", "prompt": prompt, "max_tokens": 24}
            await engine.post("/completions", json=body)
    metrics = section.open_metrics_of_selected()
    assert metrics is not None
    metrics.move(ui.window.x() + 380, ui.window.y() + 160)
    await wait_until(lambda: bool(metrics.values()), 20, "the metrics")
    await asyncio.sleep(0.8)
    grab("metrics.png", widget=metrics)
    metrics.close()


async def take_attach_dialog(ui: Ui, page: EnginesPage, grab: Callable[..., None]) -> None:
    """Attaching a server that does not answer: the daemon's refusal, in the dialog."""
    sys.path.insert(0, str(REPO))
    from tests.processes import free_port

    ui.window.show_page("Engines")
    dialog = page.instances.open_attach_dialog()
    dialog.url_edit.setText(f"http://127.0.0.1:{free_port()}/v1")
    dialog.key_edit.setText("sk-not-a-real-key")
    dialog.name_edit.setText("LM Studio on the desk")
    dialog.attach()
    await wait_until(lambda: bool(dialog.error_text()), 20, "the refusal")
    await asyncio.sleep(0.6)
    grab("attach-dialog.png", widget=dialog)
    dialog.reject()
    await asyncio.sleep(0.3)


async def take_ollama(ui: Ui, grab: Callable[..., None]) -> None:
    """The Ollama page with two models pulled and one loaded."""
    from roundhouse.gui.pages.ollama_page import OllamaPage

    page = ui.window.show_page("Ollama")
    assert isinstance(page, OllamaPage)
    await wait_until(lambda: page.base_url is not None, 20, "Ollama's models")
    for name in ("tiny", "small"):
        page.pull_view.pull(name)
        await wait_until(lambda: not page.pull_view.running, 60, f"the pull of {name}")
    await wait_until(lambda: page.models.rowCount() == 2, 10, "both models")
    page.select_model("small:latest")
    page.keep_alive.setCurrentIndex(page.keep_alive.findText("30 minutes"))
    page.context.setValue(8192)
    page.load_button.click()
    await wait_until(lambda: page.loaded.rowCount() == 1, 20, "the load")
    page.pull_view.name_edit.setText("small")
    page.select_loaded("small:latest")
    await asyncio.sleep(1.0)
    grab("ollama.png")


async def take_settings(ui: Ui, grab: Callable[..., None]) -> None:
    from roundhouse.gui.pages.settings_page import SettingsPage

    page = ui.window.show_page("Settings")
    assert isinstance(page, SettingsPage)
    await wait_until(lambda: page.settings is not None, 10, "the settings")
    page.add_python("/opt/venvs/vllm/bin/python")
    page.add_python("/usr/local/bin/python3.12")
    page.ready_timeout.setValue(900)
    await asyncio.sleep(0.6)
    grab("settings.png")


async def take_install_progress(
    ui: Ui, page: EnginesPage, releases: ReleaseServer, grab: Callable[..., None]
) -> None:
    """A second llama.cpp build being downloaded, caught half way (the server is slowed)."""
    ui.window.show_page("Engines")
    dialog = page.open_builds_dialog()
    dialog.resize(820, 560)
    dialog.move(ui.window.x() + 240, ui.window.y() + 120)
    dialog.another_button.setChecked(True)
    dialog.tag_edit.setText("b6000")
    releases.modes.delay_per_chunk_s = 0.0
    dialog.install_another()
    await wait_until(lambda: dialog.tags() == ["b6000"], 60, "the first build")
    releases.modes.delay_per_chunk_s = 0.12
    dialog.tag_edit.setText("b6100")
    dialog.install_another()
    bar = dialog.install_view.bar
    await wait_until(lambda: bar.maximum() > 0 and bar.value() > 380, 60, "half the download")
    grab("install-progress.png", widget=dialog)
    dialog.install_view.cancel()
    await wait_until(lambda: not dialog.install_view.running, 20, "the cancel")
    dialog.reject()
    await asyncio.sleep(0.3)


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    xvfb, display = start_xvfb()
    os.environ.update(DISPLAY=display, QT_QPA_PLATFORM="xcb")
    os.environ.pop("WAYLAND_DISPLAY", None)
    trayer = start_trayer(display)
    burner: subprocess.Popen[bytes] | None = None
    daemon: subprocess.Popen[bytes] | None = None
    ollama: OllamaStandin | None = None
    releases: ReleaseServer | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="roundhouse-shots-") as tmp:
            root = Path(tmp) / "home"
            llama_server = find_llama_server()
            model = write_tiny_model(Path(tmp) / "models") if llama_server else None
            if llama_server is None:
                print("no llama-server found: the instance screenshots are left out")
            ollama, releases = start_standins(Path(tmp))
            env = {
                "OLLAMA_HOST": f"127.0.0.1:{ollama.port}",
                "ROUNDHOUSE_LLAMACPP_RELEASES_URL": releases.releases_url,
            }
            daemon = start_daemon(root, llama_server, env)
            # History for the charts: quiet, a burst of load, quiet again.
            time.sleep(HISTORY_S / 3)
            burner = burn_cpu(HISTORY_S / 3)
            time.sleep(HISTORY_S * 2 / 3)

            import qasync

            from roundhouse.gui.app import application
            from roundhouse.gui.event_loop import install_asyncgen_hooks

            app = application()
            loop = qasync.QEventLoop(app)
            asyncio.set_event_loop(loop)
            restore_hooks = install_asyncgen_hooks(loop)
            try:
                saved = loop.run_until_complete(take(root, daemon, model, releases))
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                restore_hooks()
                asyncio.set_event_loop(None)
                loop.close()
    finally:
        for process in (burner, daemon, trayer, xvfb):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(15)
        if ollama is not None:
            ollama.stop()
        if releases is not None:
            releases.__exit__(None, None, None)
    for path in saved:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
