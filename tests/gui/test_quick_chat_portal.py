"""The global key on Wayland through the desktop portal's GlobalShortcuts, against a stand-in
portal on a private D-Bus (tests/fakes/shortcuts_portal.py) and a real daemon: the key is
bound as the settings say, a press the desktop reports opens quick chat, a trigger the user
chose in the desktop is named, a cancelled dialog and a desktop without the portal are said
in words with what to do."""

from __future__ import annotations

from pathlib import Path

import pytest
import qasync
from PySide6.QtWidgets import QApplication

from roundhouse.base.paths import resolve_home
from roundhouse.gui.calls.settings import patch_settings, with_ui
from roundhouse.gui.hotkey.controller import GlobalHotkey
from roundhouse.gui.hotkey.portal import DESCRIPTION, SHORTCUT_ID, PortalHotkey
from roundhouse.gui.quick_chat_key import QuickChatKey
from tests.daemon_process import DaemonProcess
from tests.fakes.shortcuts_portal import OTHER_TRIGGER, PortalBus
from tests.gui.conftest import wait_until
from tests.gui.serving import connect, run, tray_ui


def _binds(bus: PortalBus) -> list[dict[str, object]]:
    return [call for call in bus.calls() if call["call"] == "BindShortcuts"]


def test_the_portal_binds_the_key_and_its_press_opens_quick_chat(
    qapp: QApplication,
    qloop: qasync.QEventLoop,
    daemon: DaemonProcess,
    home_root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    with PortalBus(tmp_path / "bus") as bus:
        ui = tray_ui(qapp, home_root)
        assert ui.quick_chat is not None
        key = QuickChatKey(
            ui.bridge, ui.quick_chat, resolve_home(home_root), backend=PortalHotkey(bus.address)
        )
        key.start()

        def shown() -> bool:
            window = ui.quick_chat.window if ui.quick_chat else None
            return window is not None and window.isVisible()

        async def scenario() -> None:
            await connect(ui)
            await wait_until(lambda: key.hotkey.active, 15, "the portal to bind the key")
            assert key.hotkey.words == (
                "Ctrl+Shift+Space opens quick chat while any program has focus."
            )
            (bind,) = _binds(bus)
            assert bind["shortcuts"] == [
                {
                    "id": SHORTCUT_ID,
                    "description": DESCRIPTION,
                    "preferred_trigger": "CTRL+SHIFT+space",
                }
            ]
            assert not shown()
            assert bus.press() == 1
            await wait_until(shown, 10, "quick chat opened by the desktop's press")

            # Another key in Settings: the portal is asked for it at once, in a new session.
            call = patch_settings(ui.bridge, "change the key", with_ui(quick_chat_key="Ctrl+Alt+K"))
            await wait_until(lambda: call.done, 10, "the settings saved")
            await wait_until(lambda: len(_binds(bus)) == 2 and key.hotkey.active, 15, "rebound")
            assert _binds(bus)[1]["shortcuts"][0]["preferred_trigger"] == "CTRL+ALT+k"  # type: ignore[index]
            assert _binds(bus)[1]["session"] != bind["session"]

        try:
            run(ui, qloop, scenario())
        finally:
            key.close()


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        (
            "bind-other",
            f"The desktop bound quick chat to {OTHER_TRIGGER} (its own settings can change it); "
            "it works while any program has focus.",
        ),
        (
            "cancel",
            "Ctrl+Shift+Space was not bound: the desktop's dialog was cancelled. Choose the key "
            "again in Settings › Quick chat key to be asked once more, or bind it in your "
            "desktop's keyboard settings to the command `roundhouse quick-chat`",
        ),
        (
            "absent",
            "On Wayland a program cannot take Ctrl+Shift+Space for the whole desktop, and this "
            "desktop offers no global shortcuts to apps: bind it in your desktop's keyboard "
            "settings to the command `roundhouse quick-chat` (GNOME: Settings › Keyboard",
        ),
    ],
)
def test_what_the_desktop_answers_is_said_in_words(
    qapp: QApplication, qloop: qasync.QEventLoop, tmp_path: Path, mode: str, words: str
) -> None:
    with PortalBus(tmp_path / "bus", mode) as bus:
        hotkey = GlobalHotkey(PortalHotkey(bus.address))

        async def scenario() -> None:
            hotkey.apply(True, "Ctrl+Shift+Space")
            assert hotkey.pending and hotkey.words.startswith("Asking the desktop to bind")
            await wait_until(lambda: not hotkey.pending, 15, "the desktop's answer")

        try:
            qloop.run_until_complete(scenario())
            assert hotkey.words.startswith(words), hotkey.words
            assert hotkey.active == (mode == "bind-other")
        finally:
            hotkey.close()
            qloop.run_until_complete(wait_until(lambda: True))
