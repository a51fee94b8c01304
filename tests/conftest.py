"""Fixtures shared by every test tier."""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess, path_with, running_daemon, start_daemon

# The real llama-server (built by .ci/build-llama-server) and the tiny model the tests write;
# the local Hugging Face Hub (tests/fakes/hub).
pytest_plugins = ["tests.engines.fixtures", "tests.fakes.hub.fixtures"]


# A test still running this long after pytest-timeout's limit is hung where its signal cannot
# reach (a Qt event loop swallows the exception raised in a callback): print every thread's
# stack and end the run, so CI fails in minutes with the place instead of at its own limit.
HANG_MARGIN_S = 180.0


@pytest.fixture(autouse=True)
def hang_backstop(request: pytest.FixtureRequest) -> Iterator[None]:
    marker = request.node.get_closest_marker("timeout")
    limit = float(marker.args[0]) if marker and marker.args else request.config.getini("timeout")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    done = threading.Event()

    def watch() -> None:
        if done.wait(float(limit) + HANG_MARGIN_S):
            return
        if capture is not None:
            capture.suspend_global_capture(in_=False)  # back to the real stderr
        print(f"\n{request.node.nodeid} hung; every thread's stack:", file=sys.stderr)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()
        os._exit(3)

    watcher = threading.Thread(target=watch, name="hang-backstop", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()


@pytest.fixture
def home_root(tmp_path: Path) -> Path:
    # Non-ASCII on purpose: users' folders are named in every script (llama.cpp #18571).
    root = tmp_path / "дом 家"
    root.mkdir()
    return root


@pytest.fixture
def daemon(home_root: Path) -> Iterator[DaemonProcess]:
    """A real daemon process on a free loopback port, stopped after the test."""
    proc = start_daemon(home_root)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def llama_daemon(llama_server_binary: Path, home_root: Path) -> Iterator[DaemonProcess]:
    """A real daemon whose PATH finds the real llama-server; its engines stop with it."""
    with running_daemon(home_root, env=path_with(llama_server_binary)) as proc:
        yield proc
