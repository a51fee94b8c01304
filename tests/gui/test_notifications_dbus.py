"""Notifications through D-Bus, against a real daemon: the app (with no tray) tells a stand-in
notification service on a private session bus. A download from the local Hub stand-in that
finished; the Settings page's switch that silences downloads (a second one is not told, the
update found next is); a real llama-server that crashes (SIGSEGV: restarted) and is then
killed from outside (SIGKILL: not restarted); a model the gateway loads for a request. Each
is told in one plain sentence."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import httpx
import pytest
import qasync
from PySide6.QtWidgets import QApplication

from roundhouse import __version__
from roundhouse.api.downloads import DownloadRequest, DownloadState
from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceStatus, Preset
from roundhouse.base.paths import resolve_home
from roundhouse.client import DaemonClient
from roundhouse.gui.app import build_ui
from roundhouse.gui.notify import Route
from roundhouse.gui.notify_words import NoticeKind
from roundhouse.gui.pages.settings_page import SettingsPage
from tests.daemon_process import path_with, running_daemon
from tests.fakes.hub import HubStandin, hub_env
from tests.fakes.hub.build import GGUF_REPO
from tests.fakes.notifications import NotificationBus
from tests.fakes.pypi import PypiStandin
from tests.gui.conftest import wait_until
from tests.gui.serving import connect, run, start_tiny
from tests.processes import free_port
from tests.support.standins import keyring_env

Q8_FILE = "tiny-llama-Q8_0.gguf"
Q4_FILE = "tiny-llama-Q4_K_M.gguf"


def _told(bus: NotificationBus, summary: str) -> list[str]:
    return [str(call["body"]) for call in bus.calls() if call["summary"] == summary]


def test_downloads_a_switch_an_update_and_a_crash_over_dbus(
    qapp: QApplication,
    qloop: qasync.QEventLoop,
    home_root: Path,
    tmp_path: Path,
    fake_hub: HubStandin,
    llama_server_binary: Path,
    tiny_gguf: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with PypiStandin("99.0.0") as pypi, NotificationBus(tmp_path / "bus") as bus:
        env = {
            **hub_env(fake_hub),
            **keyring_env(tmp_path),
            **path_with(llama_server_binary),
            "HF_HOME": str(tmp_path / "hf"),
            "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
            "ROUNDHOUSE_UPDATES_URL": pypi.url,
        }
        with running_daemon(home_root, env=env):
            # The app finds the desktop's session bus as it would: from the environment.
            monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", bus.address)
            ui = build_ui(qapp, resolve_home(home_root), auto_start=False, tray_available=False)
            assert ui.notifier is not None and ui.notifier.route == Route.DBUS
            # Without a tray the app quits when its last window closes; the windows earlier
            # tests left are deleted while this one runs, and the last of them would end the
            # loop here. This test's own window stays hidden throughout.
            qapp.setQuitOnLastWindowClosed(False)

            async def scenario() -> None:
                await connect(ui)
                assert not ui.window.isVisible(), "the window is hidden: notifications are due"
                async with DaemonClient.for_home(ui.bridge.home) as client:
                    await client.add_download(DownloadRequest(repo=GGUF_REPO, files=[Q8_FILE]))
                    finished = f"{Q8_FILE} from {GGUF_REPO} finished downloading."
                    await wait_until(
                        lambda: _told(bus, "Download finished") == [finished], 30, "the download"
                    )
                    call = bus.calls()[0]
                    assert call["app_name"] == "Roundhouse"
                    assert call["signature"] == "susssasa{sv}i"

                    # Downloads silenced from the Settings page: saved at once.
                    page = ui.window.show_page("Settings")
                    assert isinstance(page, SettingsPage)
                    switch = page.notifications.kinds[NoticeKind.DOWNLOAD_FINISHED]
                    await wait_until(switch.isEnabled, 10, "the section enabled once connected")
                    assert switch.isChecked()
                    switch.click()

                    def silenced() -> bool:
                        full = ui.bridge.settings_full
                        return full is not None and not full.notifications.download_finished

                    await wait_until(silenced, 10, "the switch saved and back by the feed")
                    await client.add_download(DownloadRequest(repo=GGUF_REPO, files=[Q4_FILE]))

                    def second_done() -> bool:
                        queue = ui.bridge.downloads
                        return queue is not None and any(
                            i.state == DownloadState.DONE and Q4_FILE in getattr(i, "path", "")
                            for i in queue.items
                        )

                    await wait_until(second_done, 30, "the second download")
                    # An update found after it is still told: the download was not.
                    await client.check_updates()
                    update = (
                        f"Roundhouse 99.0.0 is out (this is {__version__}); Settings says how "
                        "to update."
                    )
                    await wait_until(
                        lambda: _told(bus, "Update available") == [update], 15, "the update"
                    )
                    assert _told(bus, "Download finished") == [finished]

                # A crash (SIGSEGV) is restarted by the daemon and told once it serves again.
                started = await start_tiny(ui, tiny_gguf)
                info = next(i for i in ui.bridge.instances or [] if i.id == started.id)
                assert info.pid is not None
                os.kill(info.pid, signal.SIGSEGV)
                restarted = "llama.cpp serving tiny.gguf stopped unexpectedly and was restarted."
                await wait_until(
                    lambda: restarted in _told(bus, "Engine stopped unexpectedly"), 60, "restart"
                )
                now = next(i for i in ui.bridge.instances or [] if i.id == info.id)
                assert now.restarts == 1 and now.status == InstanceStatus.READY
                assert now.pid is not None and now.pid != info.pid
                # Killed from outside (SIGKILL) is not a crash worth a restart: told as such.
                os.kill(now.pid, signal.SIGKILL)
                gone = (
                    "llama.cpp serving tiny.gguf stopped unexpectedly and was not restarted: "
                    "The engine was killed from outside (SIGKILL)"
                )

                def told_killed() -> bool:
                    said = _told(bus, "Engine stopped unexpectedly")
                    return any(text.startswith(gone) for text in said)

                await wait_until(told_killed, 30, "the kill")
                assert len(_told(bus, "Engine stopped unexpectedly")) == 2

            run(ui, qloop, scenario())


def test_a_model_the_gateway_loads_for_a_request_over_dbus(
    qapp: QApplication,
    qloop: qasync.QEventLoop,
    home_root: Path,
    tmp_path: Path,
    llama_server_binary: Path,
    tiny_gguf: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = tmp_path / "models" / "jit-tiny.gguf"
    model.parent.mkdir()
    shutil.copy(tiny_gguf, model)
    with (
        NotificationBus(tmp_path / "bus") as bus,
        running_daemon(home_root, env=path_with(llama_server_binary)) as daemon,
    ):
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", bus.address)
        ui = build_ui(qapp, resolve_home(home_root), auto_start=False, tray_available=False)

        async def scenario() -> None:
            await connect(ui)
            options = InstanceOptions(model=str(model), ctx_size=512, parallel=1)
            async with DaemonClient.for_home(ui.bridge.home) as client:
                await client.save_preset(
                    Preset(engine=EngineId.LLAMA_CPP, model=str(model), options=options)
                )
            # A client of the gateway asks for the model nothing serves: it is started.
            async with httpx.AsyncClient(base_url=daemon.url, timeout=90) as http:
                body = {
                    "model": "jit-tiny",
                    "messages": [{"role": "user", "content": "Say hello."}],
                    "max_tokens": 2,
                }
                answer = await http.post("/v1/chat/completions", json=body)
                assert answer.status_code == 200, answer.text
            loaded = "jit-tiny.gguf is loaded on llama.cpp in "

            def told() -> bool:
                said = _told(bus, "Model loaded")
                return len(said) == 1 and said[0].startswith(loaded)

            await wait_until(told, 15, "the load told")
            assert _told(bus, "Model loaded")[0].endswith(
                " s: a request asked for it and the gateway started it."
            )

        run(ui, qloop, scenario())
