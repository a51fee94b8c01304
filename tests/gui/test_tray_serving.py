"""Serving from the tray, against a real daemon and the real llama-server: the icon says
serving 1 instance, the menu lists it and stops it, picks the active model, and turns Keep
serving and Start at login on and off (the login entry lands in a temp XDG_CONFIG_HOME)."""

from __future__ import annotations

from pathlib import Path

import qasync
from PySide6.QtWidgets import QApplication

from roundhouse.api.instances import InstanceStatus
from roundhouse.client import DaemonClient
from roundhouse.core.system.autostart import DESKTOP_FILE
from roundhouse.gui.icons import TrayState
from roundhouse.gui.pages.settings_page import SettingsPage
from roundhouse.gui.tray import Tray
from roundhouse.gui.tray_status import plural
from tests.daemon_process import running_daemon
from tests.gui.conftest import wait_until
from tests.gui.serving import action, connect, run, serving_daemon, start_tiny, texts, tray_ui


def _tray(tray: Tray | None) -> Tray:
    assert tray is not None
    return tray


def test_the_tray_follows_serves_and_stops(
    qapp: QApplication,
    qloop: qasync.QEventLoop,
    home_root: Path,
    tmp_path: Path,
    llama_server_binary: Path,
    tiny_gguf: Path,
) -> None:
    xdg = tmp_path / "xdg"
    login_entry = xdg / "autostart" / DESKTOP_FILE
    ui = tray_ui(qapp, home_root)

    async def scenario() -> None:
        tray = _tray(ui.tray)
        await connect(ui)
        assert not ui.window.isVisible()
        assert ui.bridge.feed_seq is not None, "the tray's instances come by the change feed"
        # The daemon lists engines other programs (other tests) run on this machine too.
        if not ui.bridge.instances:
            await wait_until(lambda: tray.tray_state == TrayState.CONNECTED, 5, "idle")
            assert tray.icon.toolTip() == "Roundhouse: connected, no model served"
            tray.menu.aboutToShow.emit()
            assert "No model is being served" in texts(tray.menu)

        # The change feed (no poll, no page shown) brings the instance to "ready".
        info = await start_tiny(ui, tiny_gguf)
        ours = "tiny.gguf — llama.cpp, ready"
        await wait_until(lambda: ours in tray.icon.toolTip(), 10, "the instance in the tooltip")
        listed = ui.bridge.instances or []
        ready = sum(i.status == InstanceStatus.READY for i in listed)
        failed = any(i.status == InstanceStatus.FAILED for i in listed)
        assert tray.tray_state == (TrayState.ERROR if failed else TrayState.SERVING)
        tip = tray.icon.toolTip().splitlines()
        assert tip[0] == f"Roundhouse: serving {plural(ready, 'instance')}"
        if len(listed) == 1:
            assert tip == ["Roundhouse: serving 1 instance", ours]
        assert tray.status.serving == ready >= 1

        tray.menu.aboutToShow.emit()
        menu_texts = texts(tray.menu)
        assert menu_texts[0] == "Roundhouse: connected to the daemon"
        assert ours in menu_texts
        for expected in (
            "Active model",
            "Quick chat…",
            "Open Roundhouse",
            "Keep serving when windows close",
            "Start at login",
            "Quit Roundhouse…",
        ):
            assert expected in menu_texts, expected
        assert action(tray.menu, "Quick chat…").shortcut().toString() == "Ctrl+Shift+Space"

        # The Active model submenu lists what the gateway serves, the model just started
        # checked (a start makes it the active one); a pick is saved.
        models = tray.models_menu
        models.aboutToShow.emit()
        active_model = ui.active_model
        assert active_model is not None

        def served_here() -> str | None:
            return next((m.id for m in active_model.models if m.instance == info.id), None)

        await wait_until(lambda: served_here() is not None, 10, "the model in the list")
        model_id = served_here()
        async with DaemonClient.for_home(ui.bridge.home) as client:
            assert (await client.gateway_models()).active_model == model_id
        await wait_until(lambda: active_model.active == model_id, 10, "the started model")
        tray.menu.aboutToShow.emit()
        choices = [a for a in models.actions() if a.isCheckable()]
        assert [a.data() for a in choices] == [m.id for m in active_model.models]
        assert [a.data() for a in choices if a.isChecked()] == [model_id]
        choice = next(a for a in choices if a.data() == model_id)
        assert choice.text() == f"{model_id} — llama.cpp"
        choice.trigger()
        async with DaemonClient.for_home(ui.bridge.home) as client:

            async def active() -> str | None:
                return (await client.settings()).chat.active_model

            await wait_until(lambda: active_model.active == model_id, 10, "the choice")
            assert await active() == model_id
            tray.menu.aboutToShow.emit()
            checked = [a.data() for a in models.actions() if a.isChecked()]
            assert checked == [model_id]

            # The two switches save the daemon's settings; Start at login writes its entry.
            keep = action(tray.menu, "Keep serving when windows close")
            login = action(tray.menu, "Start at login")
            assert keep.isChecked() and not login.isChecked()
            login.trigger()
            await wait_until(lambda: ui.bridge.ui_settings.start_at_login, 10, "start at login")
            assert (await client.settings()).ui.start_at_login
            assert login_entry.is_file()
            assert ui.quitter.stop_daemon_on_exit is False
            keep.trigger()
            await wait_until(lambda: not ui.bridge.ui_settings.keep_serving_on_close, 10, "keep")
            assert ui.quitter.stop_daemon_on_exit is True, "closing now stops the daemon"
            tray.menu.aboutToShow.emit()
            action(tray.menu, "Start at login").trigger()
            action(tray.menu, "Keep serving when windows close").trigger()
            await wait_until(lambda: not ui.bridge.ui_settings.start_at_login, 10, "login off")
            await wait_until(lambda: ui.bridge.ui_settings.keep_serving_on_close, 10, "keep on")
            assert not login_entry.exists() and list(login_entry.parent.iterdir()) == []

            # Stop, from the instance's submenu.
            tray.menu.aboutToShow.emit()
            submenu = action(tray.menu, ours).menu()
            assert submenu is not None and texts(submenu) == ["Stop"]
            action(submenu, "Stop").trigger()

            def gone() -> bool:
                return all(i.id != info.id for i in ui.bridge.instances or [])

            await wait_until(gone, 30, "the instance to stop")
            assert all(i.id != info.id for i in (await client.instances()).instances)
        await wait_until(lambda: ours not in tray.icon.toolTip(), 10, "the tooltip to follow")
        if not ui.bridge.instances:
            assert tray.tray_state == TrayState.CONNECTED
        assert tray.last_problem == ""

    with serving_daemon(llama_server_binary, home_root, xdg):
        run(ui, qloop, scenario())
    ui.window.deleteLater()


def test_the_tray_says_when_the_daemon_is_gone(
    qapp: QApplication, qloop: qasync.QEventLoop, home_root: Path
) -> None:
    ui = tray_ui(qapp, home_root)

    async def scenario() -> None:
        tray = _tray(ui.tray)
        ui.bridge.retry()  # no daemon runs for this home, and none is started
        await wait_until(lambda: tray.tray_state == TrayState.ERROR, 10, "the error icon")
        tip = tray.icon.toolTip().splitlines()
        assert tip[0] == "Roundhouse: not connected to the daemon"
        assert tip[1] == ui.bridge.message and tip[1]
        tray.menu.aboutToShow.emit()
        assert texts(tray.menu) == [
            "Roundhouse: not connected to the daemon",
            "Open Roundhouse",
            "Start the daemon",
            "Quit Roundhouse…",
        ]

    run(ui, qloop, scenario())
    ui.window.deleteLater()


def test_start_at_login_on_the_settings_page_and_in_the_tray(
    qapp: QApplication, qloop: qasync.QEventLoop, home_root: Path, tmp_path: Path
) -> None:
    xdg = tmp_path / "xdg"
    login_entry = xdg / "autostart" / DESKTOP_FILE
    ui = tray_ui(qapp, home_root)
    ui.window.show()

    async def scenario() -> None:
        tray = _tray(ui.tray)
        await connect(ui)
        page = ui.window.show_page("Settings")
        assert isinstance(page, SettingsPage)
        await wait_until(lambda: page.settings is not None, 10, "the settings")
        desktop = page.desktop
        assert desktop.keep_serving.isChecked() and not desktop.start_at_login.isChecked()
        assert not page.save_button.isEnabled()

        desktop.start_at_login.setChecked(True)
        assert page.changed() and page.save_button.isEnabled()
        page.save_button.click()
        await wait_until(lambda: page.message.text() == "Saved.", 10, "the save")
        assert login_entry.is_file() and ui.bridge.ui_settings.start_at_login
        tray.menu.aboutToShow.emit()
        assert action(tray.menu, "Start at login").isChecked(), "the tray follows the page"

        # Turned off in the tray: the entry goes, and the page follows.
        action(tray.menu, "Start at login").trigger()
        await wait_until(lambda: not desktop.start_at_login.isChecked(), 10, "the page")
        assert not login_entry.exists() and not page.changed()

    with running_daemon(home_root, env={"XDG_CONFIG_HOME": str(xdg)}):
        run(ui, qloop, scenario())
    ui.window.deleteLater()
