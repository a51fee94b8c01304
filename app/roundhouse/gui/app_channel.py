"""The app's end of its channel, private to the user, that opens quick chat when
`roundhouse quick-chat` asks (base/app_channel.py is the other end): a Unix socket served on
the app's asyncio loop, or on Windows a user-only pipe (app_channel_pipe.py)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from roundhouse.base.app_channel import (
    OK,
    QUICK_CHAT,
    ChannelError,
    ask_app,
    channel_name,
    private_dir,
)
from roundhouse.base.paths import Home

if TYPE_CHECKING:
    from roundhouse.gui.app_channel_pipe import PipeChannel

log = logging.getLogger(__name__)
MAX_LINE = 256
# A client that connects and says nothing is let go after this long.
READ_TIMEOUT_S = 5.0


class AppChannel(QObject):
    """Listens once `listen()` is called; each line a client sends is one command."""

    def __init__(
        self, home: Home, open_quick_chat: Callable[[], object], parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._home = home
        self._open_quick_chat = open_quick_chat
        self._socket: socket.socket | None = None
        self._path = ""
        self._server: asyncio.AbstractServer | None = None
        self._starting: asyncio.Task[asyncio.AbstractServer] | None = None
        self._pipe: PipeChannel | None = None
        self.problem = ""

    def answer(self, command: str) -> str:
        """What the app says to `command`, having done it."""
        if command == QUICK_CHAT:
            self._open_quick_chat()
            return OK
        if command == "ping":
            return OK
        return f"unknown command {command[:40]!r}"

    def listen(self) -> bool:
        """Start listening; False (and `problem` in words) when it cannot."""
        if sys.platform == "win32":
            # Only Windows needs QtNetwork (about 3 MB), so only it imports it.
            from roundhouse.gui.app_channel_pipe import PipeChannel

            self._pipe = PipeChannel(
                self._home, channel_name(self._home), self.answer, MAX_LINE, self
            )
            self.problem = self._pipe.listen()
        else:
            self.problem = self._listen_unix()
        if self.problem:
            log.warning("%s", self.problem)
        return not self.problem

    def _listen_unix(self) -> str:
        try:
            private_dir()
        except (ChannelError, OSError) as exc:
            return f"`roundhouse quick-chat` cannot reach this app: {exc}"
        path = channel_name(self._home)
        try:
            sock = _bound_socket(path)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return f"`roundhouse quick-chat` cannot reach this app: {exc.strerror}"
            if ask_app(self._home, "ping", timeout_s=1.0) is not None:
                return (
                    "Another Roundhouse app on this home answers `roundhouse quick-chat`; this "
                    "one does not."
                )
            # A socket left by an app that crashed: nobody answers on it.
            try:
                Path(path).unlink()
                sock = _bound_socket(path)
            except OSError as again:
                return f"`roundhouse quick-chat` cannot reach this app: {again.strerror}"
        self._socket, self._path = sock, path
        # Bound and listening already: a client that connects before the loop runs waits.
        self._starting = asyncio.get_event_loop().create_task(
            asyncio.start_unix_server(self._serve, sock=sock, limit=MAX_LINE)
        )
        self._starting.add_done_callback(self._started)
        return ""

    def _started(self, task: asyncio.Task[asyncio.AbstractServer]) -> None:
        if not task.cancelled() and task.exception() is None:
            self._server = task.result()
            if self._socket is None:  # closed meanwhile
                self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            # Bounded both ways: a line longer than MAX_LINE raises ValueError, silence times out.
            line = await asyncio.wait_for(reader.readline(), READ_TIMEOUT_S)
            if line.endswith(b"\n"):
                writer.write((self.answer(line.decode(errors="replace").strip()) + "\n").encode())
                await asyncio.wait_for(writer.drain(), READ_TIMEOUT_S)
        except (TimeoutError, ValueError, OSError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        if self._pipe is not None:
            self._pipe.close()
        if self._socket is None:
            return
        if self._server is not None:
            self._server.close()
        elif self._starting is not None and not self._starting.done():
            self._starting.cancel()
        self._socket.close()
        self._socket = None
        # Python 3.11's server leaves the socket's file behind; the next app would have to
        # ask it and remove it.
        with contextlib.suppress(OSError):
            Path(self._path).unlink()


def _bound_socket(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        sock.listen(8)
    except OSError:
        sock.close()
        raise
    return sock
