"""Fixtures shared by every test tier."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess, start_daemon

# The real llama-server (built by .ci/build-llama-server) and the tiny model the tests write;
# the local Hugging Face Hub (tests/fakes/hub).
pytest_plugins = ["tests.engines.fixtures", "tests.fakes.hub.fixtures"]


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
