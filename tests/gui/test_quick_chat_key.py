"""The global quick chat key on X11 under Xvfb against a real daemon: xdotool presses it while
another program's window has the focus and quick chat opens; the key moves when the settings
change; a key another X client grabbed first is refused in words; `roundhouse quick-chat`
opens quick chat in the running app through its private channel."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from roundhouse.api.shortcut import parse_shortcut
from roundhouse.base.app_channel import ChannelError, channel_dir, private_dir
from roundhouse.base.paths import resolve_home
from roundhouse.gui.app import Ui
from roundhouse.gui.calls.settings import patch_settings, with_ui
from roundhouse.gui.hotkey.x11 import X11Hotkey
from roundhouse.gui.pages.settings_page import SettingsPage
from roundhouse.gui.quick_chat_key import QuickChatKey
from tests.daemon_process import DaemonProcess
from tests.gui.conftest import wait_until
from tests.gui.serving import action, connect, run, tray_ui
from tests.gui.xdisplay import OTHER_APP, focused_window_name, other_window_focused, xdotool, xvfb


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short runtime folder of the test's own (a Unix socket's path is at most 107 bytes)."""
    with tempfile.TemporaryDirectory(prefix="rh-") as folder:
        monkeypatch.setenv("XDG_RUNTIME_DIR", folder)
        yield Path(folder)


@pytest.fixture
def display() -> Iterator[str]:
    with xvfb() as name:
        yield name


# Another X client that holds a key: it grabs it, says so, and keeps it until killed.
_GRABBER = textwrap.dedent(
    """
    import sys
    from PySide6.QtCore import QCoreApplication
    from roundhouse.api.shortcut import parse_shortcut
    from roundhouse.gui.hotkey.x11 import X11Hotkey
    app = QCoreApplication([])
    key = X11Hotkey(sys.argv[1])
    print(key.register(parse_shortcut(sys.argv[2])) or "grabbed", flush=True)
    app.exec()
    """
)


def _app_with_key(qapp: QApplication, home_root: Path, display: str) -> tuple[Ui, QuickChatKey]:
    ui = tray_ui(qapp, home_root)
    assert ui.quick_chat is not None
    key = QuickChatKey(
        ui.bridge, ui.quick_chat, resolve_home(home_root), backend=X11Hotkey(display)
    )
    key.start()
    return ui, key


def _quick_chat_command(home_root: Path) -> subprocess.Popen[str]:
    """`roundhouse quick-chat` in a process of its own, as a desktop shortcut runs it."""
    return subprocess.Popen(
        [sys.executable, "-m", "roundhouse", "--home", str(home_root), "quick-chat"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _quick_chat_shown(ui: Ui) -> bool:
    return (
        ui.quick_chat is not None
        and ui.quick_chat.window is not None
        and (ui.quick_chat.window.isVisible())
    )


def test_the_key_opens_quick_chat_while_another_program_has_the_focus(
    qapp: QApplication,
    qloop: qasync.QEventLoop,
    daemon: DaemonProcess,
    home_root: Path,
    display: str,
    runtime_dir: Path,
) -> None:
    ui, key = _app_with_key(qapp, home_root, display)

    async def scenario() -> None:
        await connect(ui)
        await wait_until(lambda: key.hotkey.active, 10, "the key grabbed")
        assert key.hotkey.words == "Ctrl+Shift+Space opens quick chat while any program has focus."
        assert not _quick_chat_shown(ui) and not ui.window.isVisible()
        with other_window_focused(display):
            xdotool(display, "key", "ctrl+shift+space")
            await wait_until(lambda: _quick_chat_shown(ui), 10, "quick chat opened by the key")
            # The key went to Roundhouse, not to the window that had the focus.
            assert focused_window_name(display) == OTHER_APP

            # With Num Lock or Caps Lock on, the key still works (a grab per lock state).
            for lock in ("Num_Lock", "Caps_Lock"):
                ui.quick_chat.window.hide()
                xdotool(display, "key", lock)
                xdotool(display, "key", "ctrl+shift+space")
                await wait_until(lambda: _quick_chat_shown(ui), 10, f"the key with {lock} on")
                xdotool(display, "key", lock)

            # Moved in Settings: the new key works at once and the old one is let go.
            ui.quick_chat.window.hide()
            call = patch_settings(ui.bridge, "change the key", with_ui(quick_chat_key="Ctrl+Alt+K"))
            await wait_until(lambda: call.done, 10, "the settings saved")
            await wait_until(
                lambda: str(key.hotkey.shortcut) == "Ctrl+Alt+K" and key.hotkey.active,
                10,
                "the new key grabbed",
            )
            assert ui.quick_chat.shortcut.key().toString() == "Ctrl+Alt+K"
            assert ui.tray is not None
            ui.tray.menu.aboutToShow.emit()
            assert action(ui.tray.menu, "Quick chat…").shortcut().toString() == "Ctrl+Alt+K"
            xdotool(display, "key", "ctrl+alt+k")
            await wait_until(lambda: _quick_chat_shown(ui), 10, "quick chat opened by the new key")
            freed = X11Hotkey(display)
            assert freed.register(parse_shortcut("Ctrl+Shift+Space")) is None, "old key let go"
            freed.close()

            # Off: nothing is grabbed; the key works only inside Roundhouse's windows.
            call = patch_settings(ui.bridge, "turn it off", with_ui(quick_chat_global=False))
            await wait_until(lambda: call.done, 10, "the settings saved")
            await wait_until(lambda: not key.hotkey.enabled, 10, "the key let go")
            other = X11Hotkey(display)
            assert other.register(parse_shortcut("Ctrl+Alt+K")) is None
            other.close()

    try:
        run(ui, qloop, scenario())
    finally:
        key.close()


def test_a_key_another_program_holds_is_refused_in_words(
    qapp: QApplication,
    qtbot: QtBot,
    qloop: qasync.QEventLoop,
    daemon: DaemonProcess,
    home_root: Path,
    display: str,
    runtime_dir: Path,
) -> None:
    grabber = subprocess.Popen(
        [sys.executable, "-c", _GRABBER, display, "Ctrl+Alt+J"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    ui, key = _app_with_key(qapp, home_root, display)

    async def scenario() -> None:
        assert grabber.stdout is not None
        assert grabber.stdout.readline().strip() == "grabbed"
        await connect(ui)
        await wait_until(lambda: key.hotkey.active, 10, "the default key grabbed")
        page = ui.window.show_page("Settings")
        assert isinstance(page, SettingsPage)
        section = page.quick_chat_key
        assert section.state.text() == key.hotkey.words
        # A key pressed in the Settings page's editor is saved and applied at once.
        qtbot.keyClick(
            section.editor,
            Qt.Key.Key_J,
            Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier,
        )
        assert section.key_text() == "Ctrl+Alt+J"
        await wait_until(lambda: bool(key.hotkey.problem), 10, "the key refused")
        assert ui.bridge.ui_settings.quick_chat_key == "Ctrl+Alt+J"
        assert key.hotkey.problem.startswith(
            "Ctrl+Alt+J is taken: another program on this X display grabbed it first. "
            "Choose another key in Settings"
        )
        assert key.hotkey.words == key.hotkey.problem and not key.hotkey.active
        # The page says it where the key was chosen, as a problem.
        assert section.state.text() == key.hotkey.problem
        assert section.state.objectName() == "formProblem" and section.error.isHidden()
        # A key no global shortcut may be is refused there before it is saved.
        section.choose_key("Q")
        assert section.error.text().startswith("That key was not used: 'Q' has no Ctrl, Alt")
        assert section.key_text() == "Ctrl+Alt+J"
        # The key the app held before is let go too: it holds nothing now.
        other = X11Hotkey(display)
        assert other.register(parse_shortcut("Ctrl+Shift+Space")) is None
        other.close()

    try:
        run(ui, qloop, scenario())
    finally:
        key.close()
        grabber.terminate()
        grabber.wait(10)


def test_roundhouse_quick_chat_opens_it_in_the_running_app(
    qapp: QApplication,
    qloop: qasync.QEventLoop,
    daemon: DaemonProcess,
    home_root: Path,
    display: str,
    runtime_dir: Path,
) -> None:
    ui, key = _app_with_key(qapp, home_root, display)
    assert key.channel.problem == ""
    folder = channel_dir()
    assert folder.parent == runtime_dir and folder.stat().st_mode & 0o777 == 0o700

    async def scenario() -> None:
        await connect(ui)
        cli = _quick_chat_command(home_root)
        await wait_until(lambda: cli.poll() is not None, 30, "roundhouse quick-chat to end")
        out, err = cli.communicate()
        assert cli.returncode == 0, (out, err)
        assert _quick_chat_shown(ui)

    try:
        run(ui, qloop, scenario())
    finally:
        key.close()


def test_a_channel_folder_others_may_enter_is_refused(runtime_dir: Path) -> None:
    folder = private_dir()
    folder.chmod(0o755)
    with pytest.raises(ChannelError, match="not a folder private to you"):
        private_dir()
    folder.chmod(0o700)
    assert private_dir() == folder
