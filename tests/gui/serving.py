"""Helpers of the tray and quick chat tests: the app with a tray, a daemon that serves the
tiny model with the real llama-server, and menu actions found by their text."""

from __future__ import annotations

from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import qasync
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QMenu

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceInfo, InstanceStatus, StartRequest
from roundhouse.base.paths import resolve_home
from roundhouse.gui.app import Ui, build_ui
from roundhouse.gui.daemon_bridge import ConnectionState
from tests.daemon_process import DaemonProcess, path_with, running_daemon
from tests.gui.conftest import wait_until

READY_S = 60.0


@contextmanager
def serving_daemon(binary: Path, home_root: Path, xdg_config: Path) -> Iterator[DaemonProcess]:
    """A real daemon that finds llama-server; Start at login writes under `xdg_config`."""
    env = {**path_with(binary), "XDG_CONFIG_HOME": str(xdg_config)}
    with running_daemon(home_root, env=env) as proc:
        yield proc


def tray_ui(qapp: QApplication, home_root: Path) -> Ui:
    """The app as built with a tray; its window stays hidden (so no page polls instances)."""
    return build_ui(qapp, resolve_home(home_root), auto_start=False, tray_available=True)


def run(ui: Ui, qloop: qasync.QEventLoop, scenario: Coroutine[Any, Any, None]) -> None:
    """Run the scenario, then end the bridge's tasks while the loop still runs them."""
    try:
        qloop.run_until_complete(scenario)
    finally:
        if ui.quick_chat is not None:
            ui.quick_chat.close()
        qloop.run_until_complete(ui.bridge.aclose())


async def connect(ui: Ui) -> None:
    ui.bridge.start()
    await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
    await wait_until(lambda: ui.bridge.instances is not None, 10, "the instance list")


async def start_tiny(ui: Ui, model: Path) -> InstanceInfo:
    """Start the tiny model through the daemon and wait until it is ready."""
    options = InstanceOptions(model=str(model), ctx_size=512, parallel=1)
    call = ui.bridge.start_instance(StartRequest(engine=EngineId.LLAMA_CPP, options=options))
    await wait_until(lambda: call.done, 20, "the daemon to accept the start")
    assert call.failure is None, call.failure
    started: InstanceInfo = call.result

    def ready() -> bool:
        return any(
            i.id == started.id and i.status == InstanceStatus.READY
            for i in ui.bridge.instances or []
        )

    await wait_until(ready, READY_S, "the instance to be ready")
    return started


def texts(menu: QMenu) -> list[str]:
    return [a.text() for a in menu.actions() if not a.isSeparator()]


def action(menu: QMenu, text: str) -> QAction:
    found = [a for a in menu.actions() if a.text() == text]
    assert found, f"no {text!r} in {texts(menu)}"
    return found[0]
