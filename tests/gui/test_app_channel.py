"""The app's channel on a Unix socket: commands answered on the app's loop, bounded reads,
silent clients let go, a crashed app's socket replaced, nothing left behind."""

from __future__ import annotations

import asyncio
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync

from roundhouse.base.app_channel import channel_name, private_dir
from roundhouse.base.paths import resolve_home
from roundhouse.gui import app_channel
from roundhouse.gui.app_channel import MAX_LINE, AppChannel

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Unix sockets")


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short runtime folder of the test's own (a Unix socket's path is at most 107 bytes)."""
    with tempfile.TemporaryDirectory(prefix="rh-") as folder:
        monkeypatch.setenv("XDG_RUNTIME_DIR", folder)
        yield Path(folder)


async def _ask(path: str, data: bytes) -> bytes:
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(data)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    await writer.wait_closed()
    return answer


def test_commands_are_answered_and_the_socket_goes_with_the_channel(
    qloop: qasync.QEventLoop, runtime_dir: Path, tmp_path: Path
) -> None:
    home = resolve_home(tmp_path / "home")
    opened: list[bool] = []
    channel = AppChannel(home, lambda: opened.append(True))
    assert channel.listen(), channel.problem
    path = channel_name(home)
    assert Path(path).parent.stat().st_mode & 0o777 == 0o700

    async def scenario() -> None:
        assert await _ask(path, b"ping\n") == b"ok\n"
        assert opened == []
        assert await _ask(path, b"quick-chat\n") == b"ok\n"
        assert opened == [True]
        assert await _ask(path, b"dance\n") == b"unknown command 'dance'\n"
        # Longer than a line may be: let go without an answer, and nothing done.
        assert await _ask(path, b"quick-chat" + b" " * MAX_LINE + b"\n") == b""
        assert opened == [True]

    try:
        qloop.run_until_complete(scenario())
    finally:
        channel.close()
        # The server's side of each connection closes on the loop: let it, here.
        qloop.run_until_complete(asyncio.sleep(0.2))
    assert not Path(path).exists()


def test_a_silent_client_is_let_go(
    qloop: qasync.QEventLoop, runtime_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_channel, "READ_TIMEOUT_S", 0.3)
    home = resolve_home(tmp_path / "home")
    channel = AppChannel(home, lambda: None)
    assert channel.listen(), channel.problem

    async def scenario() -> None:
        reader, writer = await asyncio.open_unix_connection(channel_name(home))
        # Half a command and then nothing: the app hangs up on its own.
        writer.write(b"quick")
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()

    try:
        qloop.run_until_complete(scenario())
    finally:
        channel.close()


def test_a_crashed_apps_socket_is_replaced(
    qloop: qasync.QEventLoop, runtime_dir: Path, tmp_path: Path
) -> None:
    home = resolve_home(tmp_path / "home")
    path = channel_name(home)
    # As a crash leaves it: the socket's file, and nobody listening on it. (Made by hand, not
    # by an AppChannel closed behind its back: that one's server would still start on the
    # shared loop, on a descriptor the next test reuses.)
    private_dir()
    with socket.socket(socket.AF_UNIX) as crashed:
        crashed.bind(path)
    assert Path(path).exists()
    with socket.socket(socket.AF_UNIX) as probe, pytest.raises(ConnectionRefusedError):
        probe.connect(path)

    second = AppChannel(home, lambda: None)
    try:
        assert second.listen(), second.problem
        assert qloop.run_until_complete(_ask(path, b"ping\n")) == b"ok\n"
    finally:
        second.close()
