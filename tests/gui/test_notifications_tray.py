"""Notifications through the tray, on a real X display (Xvfb) with a real tray (trayer): the
app started as at login (only its tray icon) tells a download from the local Hub stand-in
that finished, and one the Hub refuses, as the tray's balloons, and not also over D-Bus,
although a notification service answers there (never both for one event)."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from roundhouse.api.downloads import DownloadRequest
from roundhouse.base.paths import resolve_home
from roundhouse.client import DaemonClient
from tests.daemon_process import running_daemon
from tests.fakes.hub import HubStandin, hub_env
from tests.fakes.hub.build import GGUF_REPO
from tests.fakes.notifications import NotificationBus
from tests.gui.xdisplay import need, xvfb
from tests.processes import free_port
from tests.support.standins import keyring_env

REPO = Path(__file__).resolve().parents[2]
Q8_FILE = "tiny-llama-Q8_0.gguf"
Q4_FILE = "tiny-llama-Q4_K_M.gguf"


@contextmanager
def _display_with_tray() -> Iterator[str]:
    """A fresh Xvfb (tests/gui/xdisplay.py) with trayer's tray on it; the display's name."""
    with xvfb() as display:
        argv = [need("trayer"), "--edge", "top", "--align", "right", "--SetDockType", "true"]
        tray = subprocess.Popen(argv, env={**os.environ, "DISPLAY": display})
        try:
            yield display
        finally:
            tray.terminate()
            tray.wait(10)


class _Lines:
    """The driver's lines of JSON, read in a thread so a wait can time out."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._lines: queue.Queue[dict[str, object]] = queue.Queue()
        self.seen: list[dict[str, object]] = []
        assert process.stdout is not None
        stream = process.stdout
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self._lines.put(json.loads(line))

    def wait_for(self, key: str, within_s: float) -> dict[str, object]:
        deadline = time.monotonic() + within_s
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no {key!r} from the app; it said {self.seen}"
            try:
                item = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(item)
            if key in item:
                return item


async def _download(home_root: Path, name: str) -> None:
    async with DaemonClient.for_home(resolve_home(home_root)) as client:
        await client.add_download(DownloadRequest(repo=GGUF_REPO, files=[name]))


def test_a_finished_download_is_the_trays_balloon_and_not_also_dbus(
    home_root: Path, tmp_path: Path, fake_hub: HubStandin
) -> None:
    env = {
        **hub_env(fake_hub),
        **keyring_env(tmp_path),
        "HF_HOME": str(tmp_path / "hf"),
        "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
    }
    with (
        NotificationBus(tmp_path / "bus") as bus,
        _display_with_tray() as display,
        running_daemon(home_root, env=env),
    ):
        app_env = {
            **os.environ,
            "DISPLAY": display,
            "QT_QPA_PLATFORM": "xcb",
            # A session bus whose notification service would record a second delivery.
            "DBUS_SESSION_BUS_ADDRESS": bus.address,
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
        }
        app = subprocess.Popen(
            [sys.executable, "-m", "tests.gui.notify_tray_driver", str(home_root)],
            env=app_env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            lines = _Lines(app)
            ready = lines.wait_for("ready", 60)
            assert ready == {"ready": "tray", "window_visible": False}
            asyncio.run(_download(home_root, Q8_FILE))
            finished = f"{Q8_FILE} from {GGUF_REPO} finished downloading."
            told = lines.wait_for("told", 30)
            assert told["told"] == ["tray", "Download finished", finished]
            balloon = lines.wait_for("balloon", 10)
            assert balloon["balloon"] == ["Download finished", finished]
            # The Hub refuses the next file: its failure, with the reason, in words.
            fake_hub.set_faults({"repo": "*", "path": Q4_FILE, "status": 404})
            asyncio.run(_download(home_root, Q4_FILE))
            failed = f"{Q4_FILE} from {GGUF_REPO} did not finish downloading: "
            balloon = lines.wait_for("balloon", 60)
            title, text = balloon["balloon"]  # type: ignore[misc]
            assert title == "Download failed" and text.startswith(failed), balloon
            assert "no longer on the Hub" in text
            time.sleep(1.0)  # a D-Bus delivery, wrongly made, would have arrived by now
            assert bus.calls() == [], "told through the tray and D-Bus both"
        finally:
            app.send_signal(signal.SIGTERM)
            try:
                code = app.wait(30)
            except subprocess.TimeoutExpired:
                app.kill()
                raise
        assert code == 0
