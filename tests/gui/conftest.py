"""GUI test fixtures: offscreen Qt, a fresh qasync loop per test, Qt warnings fail tests."""

from __future__ import annotations

import os

# Before any Qt import: no display here, and pyqtgraph must pick the binding the app uses.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_API", "pyside6")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
import qasync
from PySide6.QtWidgets import QApplication

from roundhouse.api.discovery import read_discovery
from roundhouse.base.paths import resolve_home
from roundhouse.gui.app import Ui, build_ui
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.event_loop import GuiEventLoop, install_asyncgen_hooks
from roundhouse.gui.pages.settings_page import SettingsPage
from roundhouse.gui.widgets.gateway_settings import GatewaySettingsSection

GUI_DIR = Path(__file__).parent
# What the offscreen platform says about features it lacks: not a defect of ours.
IGNORED_QT_MESSAGES = ["This plugin does not support"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if GUI_DIR in Path(item.path).parents:
            item.add_marker(pytest.mark.gui)
            item.add_marker(pytest.mark.qt_log_level_fail("WARNING"))
            item.add_marker(pytest.mark.qt_log_ignore(*IGNORED_QT_MESSAGES))


@pytest.fixture
def qloop(qapp: QApplication) -> Iterator[qasync.QEventLoop]:
    """A fresh qasync loop; tests drive it with run_until_complete."""
    # Tests close windows while the loop runs: that must not quit the application.
    qapp.setQuitOnLastWindowClosed(False)
    loop = GuiEventLoop(qapp)
    asyncio.set_event_loop(loop)
    restore_hooks = install_asyncgen_hooks(loop)
    try:
        yield loop
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        restore_hooks()
        asyncio.set_event_loop(None)
        loop.close()


# A CI host runs the whole suite on two loaded cores: a daemon that answers in 50 ms here
# may take seconds there. Waits end as soon as their condition holds, so the slack costs
# nothing on a pass; it only turns a slow answer into a pass instead of a flake.
WAIT_SLACK = 3.0 if os.environ.get("CI") else 1.0


async def wait_until(predicate: Callable[[], bool], within_s: float = 15.0, what: str = "") -> None:
    """Let the loop run until `predicate()` holds; fail the test after `within_s` seconds
    (times WAIT_SLACK on CI)."""
    within_s *= WAIT_SLACK
    deadline = time.monotonic() + within_s
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {within_s:.0f} s waiting for {what or predicate}")
        await asyncio.sleep(0.05)


async def open_gateway_settings(ui: Ui) -> tuple[SettingsPage, GatewaySettingsSection]:
    """Connect the app to its daemon and show the Settings page's Gateway section, read."""
    ui.bridge.start()
    await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
    page = ui.window.show_page("Settings")
    assert isinstance(page, SettingsPage)
    section = page.gateway
    await wait_until(lambda: section.status is not None, 10, "the gateway's state")
    return page, section


def close_bridge(loop: qasync.QEventLoop, bridge: DaemonBridge, within_s: float = 20.0) -> None:
    """`bridge.aclose()` on the loop, failing with every task's stack when it does not end
    (inside a Qt loop, pytest-timeout's signal cannot end it)."""

    async def close() -> None:
        try:
            await asyncio.wait_for(bridge.aclose(), within_s)
        except TimeoutError:
            stacks = [
                _await_chain(task)
                for task in asyncio.all_tasks()
                if task is not asyncio.current_task()
            ]
            pytest.fail(f"the bridge did not close in {within_s:g} s; tasks:\n" + "\n".join(stacks))

    loop.run_until_complete(close())


def _await_chain(task: asyncio.Task[object]) -> str:
    """Where a task waits, through every coroutine and async generator it awaits."""
    lines = [repr(task)]
    step: object = task.get_coro()
    while step is not None:
        frame = next(
            (
                getattr(step, a)
                for a in ("cr_frame", "ag_frame", "gi_frame")
                if getattr(step, a, None)
            ),
            None,
        )
        if frame is not None:
            lines.append(f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        step = next(
            (
                getattr(step, a)
                for a in ("cr_await", "ag_await", "gi_yieldfrom")
                if getattr(step, a, None)
            ),
            None,
        )
    lines.append(f"  waiting for {getattr(task, '_fut_waiter', None)!r}")
    return "\n".join(lines)


@pytest.fixture
def ui(qapp: QApplication, home_root: Path) -> Iterator[Ui]:
    """The app's window, shown, against the home's daemon; its bridge is not started."""
    built = build_ui(qapp, resolve_home(home_root), auto_start=False, tray_available=False)
    built.window.show()
    yield built
    built.window.deleteLater()


@pytest.fixture
def spawn_home(home_root: Path) -> Iterator[Path]:
    """A home whose daemon, if the app starts one, binds a free port and is stopped after."""
    config = home_root / "config"
    config.mkdir()
    # The default port may be taken by another test or a real daemon on this machine.
    (config / "settings.toml").write_text("[daemon]\nport = 0\n", encoding="utf-8")
    try:
        yield home_root
    finally:
        _stop_spawned_daemon(home_root)


def _stop_spawned_daemon(root: Path) -> None:
    found = read_discovery(resolve_home(root).discovery_file)
    if found is None:
        return
    subprocess.run(
        [sys.executable, "-m", "roundhouse", "--home", str(root), "stop"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    try:
        process = psutil.Process(found.pid)
        if process.create_time() > found.started_at:
            return  # the pid now belongs to another process
    except psutil.NoSuchProcess:
        return
    # `stop` failed: a leftover daemon would outlive the test run.
    process.kill()
    process.wait(timeout=10)
