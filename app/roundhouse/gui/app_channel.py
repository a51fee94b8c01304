"""The app's end of its channel: a QLocalServer, private to the user, that opens quick chat
when `roundhouse quick-chat` asks (base/app_channel.py is the other end)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from roundhouse.base.app_channel import (
    OK,
    QUICK_CHAT,
    ChannelError,
    ask_app,
    channel_name,
    private_dir,
)
from roundhouse.base.paths import Home

log = logging.getLogger(__name__)
MAX_LINE = 256


class AppChannel(QObject):
    """Listens once `listen()` is called; each line a client sends is one command."""

    def __init__(
        self, home: Home, open_quick_chat: Callable[[], object], parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._home = home
        self._open_quick_chat = open_quick_chat
        self.server = QLocalServer(self)
        # Windows: the pipe's ACL lets only this user in (elsewhere the 0700 folder does).
        self.server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self.server.newConnection.connect(self._on_new_connection)
        self.problem = ""

    def listen(self) -> bool:
        """Start listening; False (and `problem` in words) when it cannot."""
        try:
            if sys.platform != "win32":
                private_dir()
        except (ChannelError, OSError) as exc:
            self.problem = f"`roundhouse quick-chat` cannot reach this app: {exc}"
            log.warning("%s", self.problem)
            return False
        name = channel_name(self._home)
        if self.server.listen(name):
            return True
        if ask_app(self._home, "ping", timeout_s=1.0) is not None:
            self.problem = (
                "Another Roundhouse app on this home answers `roundhouse quick-chat`; this one "
                "does not."
            )
            log.warning("%s", self.problem)
            return False
        # A socket left by an app that crashed: nobody answers on it.
        QLocalServer.removeServer(name)
        if self.server.listen(name):
            return True
        self.problem = f"`roundhouse quick-chat` cannot reach this app: {self.server.errorString()}"
        log.warning("%s", self.problem)
        return False

    def close(self) -> None:
        self.server.close()

    def _on_new_connection(self) -> None:
        while self.server.hasPendingConnections():
            client = self.server.nextPendingConnection()
            client.readyRead.connect(lambda c=client: self._on_ready_read(c))
            client.disconnected.connect(client.deleteLater)
            if client.canReadLine():
                self._on_ready_read(client)

    def _on_ready_read(self, client: QLocalSocket) -> None:
        if not client.canReadLine():
            if client.bytesAvailable() > MAX_LINE:
                client.abort()
            return
        command = bytes(client.readLine(MAX_LINE).data()).decode(errors="replace").strip()
        if command == QUICK_CHAT:
            self._open_quick_chat()
            answer = OK
        elif command == "ping":
            answer = OK
        else:
            answer = f"unknown command {command[:40]!r}"
        client.write((answer + "\n").encode())
        client.flush()
        client.disconnectFromServer()
