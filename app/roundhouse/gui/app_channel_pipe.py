"""The app's channel on Windows: a QLocalServer pipe whose ACL lets only this user in."""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from roundhouse.base.app_channel import ask_app
from roundhouse.base.paths import Home

log = logging.getLogger(__name__)


class PipeChannel(QObject):
    """Serves `answer` on the home's pipe once `listen()` is called; one line, one command."""

    def __init__(
        self, home: Home, name: str, answer: Callable[[str], str], max_line: int, parent: QObject
    ) -> None:
        super().__init__(parent)
        self._home = home
        self._name = name
        self._answer = answer
        self._max_line = max_line
        self.server = QLocalServer(self)
        # The standard library's pipe servers (asyncio's, multiprocessing's) make their pipes
        # with the default ACL, which lets every user read them; Qt's option allows this user only.
        self.server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self.server.newConnection.connect(self._on_new_connection)

    def listen(self) -> str:
        """Start listening: "" when it does, else why not in words."""
        if self.server.listen(self._name):
            return ""
        if ask_app(self._home, "ping", timeout_s=1.0) is not None:
            return (
                "Another Roundhouse app on this home answers `roundhouse quick-chat`; this one "
                "does not."
            )
        QLocalServer.removeServer(self._name)
        if self.server.listen(self._name):
            return ""
        return f"`roundhouse quick-chat` cannot reach this app: {self.server.errorString()}"

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
            if client.bytesAvailable() > self._max_line:
                client.abort()
            return
        line = bytes(client.readLine(self._max_line).data()).decode(errors="replace")
        client.write((self._answer(line.strip()) + "\n").encode())
        client.flush()
        client.disconnectFromServer()
