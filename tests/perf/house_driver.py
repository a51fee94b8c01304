"""Drive one tree's app against its counting daemon: idle cost per page and requests per chat turn.

Run as a script with that tree's `app` first on PYTHONPATH (the benchmark runs it once on the
tree before a change and once on this one); prints one JSON object of figures."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from roundhouse.api.discovery import read_discovery
from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceStatus, StartRequest
from roundhouse.base.paths import resolve_home
from roundhouse.client import DaemonClient
from roundhouse.gui.app import build_ui
from roundhouse.gui.event_loop import GuiEventLoop

HERE = Path(__file__).parent
WARM_S = float(os.environ.get("HOUSE_WARM_S", "4"))
WINDOW_S = float(os.environ.get("HOUSE_WINDOW_S", "20"))


def _cpu(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


def _requests(count_file: Path, since: float, until: float) -> list[str]:
    if not count_file.exists():
        return []
    lines = count_file.read_text(encoding="utf-8").splitlines()
    return [line.split(" ", 1)[1] for line in lines if since <= float(line.split()[0]) < until]


def _daemon(root: Path, binary: Path, count_file: Path) -> tuple[subprocess.Popen[bytes], Any]:
    env = {
        **os.environ,
        "ROUNDHOUSE_COUNT_FILE": str(count_file),
        "PATH": f"{binary.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    argv = [sys.executable, str(HERE / "counting_serve.py"), "--home", str(root)]
    process = subprocess.Popen(
        [*argv, "serve", "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    home = resolve_home(root)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        found = read_discovery(home.discovery_file)
        if found is not None and found.pid == process.pid and home.token_file.exists():
            return process, found
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("the daemon did not start")


async def _wait(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def _turn(page: Any, text: str, count_file: Path) -> list[str]:
    """Send `text` on the Chat page; the requests from the send until the reply is saved."""
    begin = time.monotonic()
    transcript = page.transcript
    before = len(transcript.messages)
    page.input.setPlainText(text)
    QTest.keyClick(page.input, Qt.Key.Key_Return)

    def answered() -> bool:
        last = transcript.messages[-1] if transcript.messages else None
        done = len(transcript.messages) >= before + 2 and not page.busy
        return done and last is not None and last.message is not None

    await _wait(answered, 60, "the reply to be saved")
    await asyncio.sleep(1.0)  # what the page asks for after the reply
    seen = _requests(count_file, begin, time.monotonic())
    # The idle traffic of the page is not the turn's.
    return [r for r in seen if "/events" not in r and "/metrics" not in r]


async def _scenario(root: Path, binary: Path, model: Path, figures: dict[str, Any]) -> None:
    count_file = root / "requests.log"
    daemon, found = _daemon(root, binary, count_file)
    figures["daemon_pid"] = daemon.pid
    home = resolve_home(root)
    token = home.token_file.read_text(encoding="ascii").strip()
    daemon_proc, me = psutil.Process(daemon.pid), psutil.Process()
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    ui = build_ui(app, home, auto_start=False, tray_available=False)
    try:
        options = InstanceOptions(model=str(model), ctx_size=1024, parallel=1, threads=1)
        async with DaemonClient(found.url, token) as client:
            started = await client.start_instance(
                StartRequest(engine=EngineId.LLAMA_CPP, options=options)
            )
            deadline = time.monotonic() + 60
            while (info := await client.instance(started.id)).status != InstanceStatus.READY:
                if info.status == InstanceStatus.FAILED or time.monotonic() > deadline:
                    raise RuntimeError(f"the model did not start: {info}")
                await asyncio.sleep(0.1)
        ui.window.show()
        ui.bridge.start()
        await _wait(lambda: ui.bridge.state.value == "connected", 20, "the app to connect")
        pages: dict[str, Any] = {}
        nav = ui.window.navigation
        for title in [nav.item(row).text() for row in range(nav.count())]:
            ui.window.show_page(title)
            await asyncio.sleep(WARM_S)
            begin, app0, daemon0 = time.monotonic(), _cpu(me), _cpu(daemon_proc)
            await asyncio.sleep(WINDOW_S)
            end, app1, daemon1 = time.monotonic(), _cpu(me), _cpu(daemon_proc)
            seen = _requests(count_file, begin, end)
            pages[title] = {
                "app_cpu_pct": round(100 * (app1 - app0) / (end - begin), 2),
                "daemon_cpu_pct": round(100 * (daemon1 - daemon0) / (end - begin), 2),
                "requests_per_min": round(len(seen) * 60 / (end - begin), 1),
                "paths": sorted(set(seen)),
            }
        figures["pages"] = pages
        page: Any = ui.window.show_page("Chat")
        picker = page.picker
        await _wait(lambda: picker.findText(model.stem) >= 0, 20, "the model in the picker")
        picker.setCurrentIndex(picker.findText(model.stem))
        await asyncio.sleep(1.0)
        turns = [await _turn(page, text, count_file) for text in ("Hello there", "And again")]
        figures["chat_turn_new"] = {"requests": len(turns[0]), "paths": turns[0]}
        figures["chat_turn_existing"] = {"requests": len(turns[1]), "paths": turns[1]}
    finally:
        await ui.bridge.aclose()


def _end_tree(pid: int) -> None:
    """The daemon and every engine it started, whatever state the run ended in."""
    try:
        daemon = psutil.Process(pid)
        family = [*daemon.children(recursive=True), daemon]
    except psutil.NoSuchProcess:
        return
    for proc in family:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    psutil.wait_procs(family, timeout=10)


def main() -> None:
    root, binary, model = (Path(arg) for arg in sys.argv[1:4])
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = QApplication(sys.argv[:1])
    app.setQuitOnLastWindowClosed(False)
    loop = GuiEventLoop(app)
    asyncio.set_event_loop(loop)
    figures: dict[str, Any] = {}
    try:
        loop.run_until_complete(_scenario(root, binary, model, figures))
    finally:
        if "daemon_pid" in figures:
            _end_tree(figures.pop("daemon_pid"))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
