"""The real app under Xvfb (Qt's xcb platform) against a real daemon: `roundhouse quick-chat`
with no app running starts it with quick chat open; the app holds the global key; xdotool's
Ctrl+Shift+Space opens quick chat while another program's window has the focus, and hides it
when it is in front; a second `roundhouse quick-chat` opens it in the running app."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from roundhouse.api.shortcut import parse_shortcut
from roundhouse.base.app_channel import ask_app
from roundhouse.base.paths import resolve_home
from roundhouse.gui.hotkey.x11 import X11Hotkey
from tests.daemon_process import DaemonProcess
from tests.gui.xdisplay import other_window_focused, xdotool, xvfb

QUICK_CHAT_TITLE = "^Quick chat — Roundhouse$"
WITHIN_S = 60.0 if os.environ.get("CI") else 30.0


@pytest.fixture
def display() -> Iterator[str]:
    with xvfb() as name:
        yield name


def _wait(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WITHIN_S
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _quick_chat_windows(display: str) -> list[str]:
    found = subprocess.run(
        ["xdotool", "search", "--onlyvisible", "--name", QUICK_CHAT_TITLE],
        env={**os.environ, "DISPLAY": display},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return found.stdout.split()


def _key_taken(display: str) -> bool:
    """Whether another X client (the app) holds Ctrl+Shift+Space: a grab of ours is refused."""
    probe = X11Hotkey(display)
    try:
        return probe.register(parse_shortcut("Ctrl+Shift+Space")) is not None
    finally:
        probe.close()


def _hide_quick_chat(display: str) -> None:
    (window,) = _quick_chat_windows(display)
    xdotool(display, "windowfocus", "--sync", window)
    xdotool(display, "key", "Escape")
    _wait(lambda: not _quick_chat_windows(display), "Esc to hide quick chat")


def test_the_app_opens_quick_chat_from_the_command_and_the_key(
    qapp: QApplication,
    daemon: DaemonProcess,
    home_root: Path,
    display: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with tempfile.TemporaryDirectory(prefix="rh-") as runtime:
        env = {
            **os.environ,
            "DISPLAY": display,
            "QT_QPA_PLATFORM": "xcb",
            "XDG_RUNTIME_DIR": runtime,
            # The app's own Qt settings (window places) go here, not to the user's.
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        }
        command = [sys.executable, "-m", "roundhouse", "--home", str(home_root), "quick-chat"]
        home = resolve_home(home_root)
        monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)  # where ask_app looks too
        app = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            # No app ran: the command became the app, quick chat open.
            _wait(lambda: bool(_quick_chat_windows(display)), "quick chat on screen")
            _wait(lambda: ask_app(home, "ping") == "ok", "the app's channel")
            _wait(lambda: _key_taken(display), "the app to hold the key")

            _hide_quick_chat(display)
            with other_window_focused(display):
                xdotool(display, "key", "ctrl+shift+space")
                _wait(lambda: bool(_quick_chat_windows(display)), "quick chat opened by the key")
                # In front with the focus, the same key sends it away again.
                (window,) = _quick_chat_windows(display)
                xdotool(display, "windowfocus", "--sync", window)
                xdotool(display, "key", "ctrl+shift+space")
                _wait(lambda: not _quick_chat_windows(display), "the key to hide quick chat")

            # Now an app runs: the command asks it and ends.
            again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
            assert again.returncode == 0, again.stdout + again.stderr
            _wait(lambda: bool(_quick_chat_windows(display)), "quick chat opened by the command")
            assert app.poll() is None
        finally:
            app.send_signal(signal.SIGTERM)  # quits as the menu does, leaving the daemon
            try:
                out, _ = app.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                app.kill()
                out, _ = app.communicate()
        assert app.returncode == 0, out.decode(errors="replace")
        assert not _key_taken(display), "the app let the key go as it quit"
