"""One extra uvicorn server of the daemon on one bound socket: bound with its failures kept in
words, served in the daemon's loop, its end kept as words, stopped on demand. The gateway's
listeners and the peer listener each run one."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Iterator

import uvicorn

from roundhouse.core.infra.ports import PortInUseError, bind_listener

log = logging.getLogger(__name__)


class QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signals alone: the daemon's own server handles them and
    stops this one (two servers capturing signals would leave one running after Ctrl+C)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class ListenerRun:
    """A listener's server while it runs, and why it does not when it does not."""

    def __init__(self, name: str, port_setting: str) -> None:
        # Its name in the log ("Gateway listener"), and the setting a taken port is moved by.
        self.name = name
        self.port_setting = port_setting
        self.error: str | None = None
        # The address the socket is bound to: the port the OS chose for port 0.
        self.bound: tuple[str, int] | None = None
        self._server: QuietServer | None = None
        self._task: asyncio.Task[None] | None = None

    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self, host: str, port: int, config: Callable[[], uvicorn.Config]) -> bool:
        """Bind host:port and serve the app `config` makes; False, with `error` in words,
        when the address cannot be bound."""
        self.error, self.bound = None, None
        try:
            sock = bind_listener(host, port)
        except PortInUseError as exc:
            self.error = f"Not listening: {exc.strerror}"
            if exc.owner is not None and exc.owner.pid == os.getpid():
                self.error = (
                    f"Not listening: port {port} on {host} is the daemon's own. "
                    f"Choose another {self.port_setting}."
                )
            else:
                self.error += f" Choose another {self.port_setting}, or stop that program."
        except OSError as exc:
            self.error = (
                f"Not listening: cannot bind {host}:{port} ({exc.strerror or exc}). "
                "Check that the address belongs to this machine."
            )
        if self.error is not None:
            log.warning("%s not started: %s", self.name, self.error)
            return False
        self._server = server = QuietServer(config())
        self._task = asyncio.create_task(server.serve(sockets=[sock]), name=self.name)
        self._task.add_done_callback(self._on_done)
        host, port = sock.getsockname()[:2]
        self.bound = (host, port)
        return True

    def _on_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.error = f"Stopped by an error: {type(exc).__name__}: {exc}"
            log.error("%s failed", self.name, exc_info=exc)

    async def stop(self) -> None:
        """Stop serving: uvicorn closes the socket and waits for open requests (its graceful
        shutdown's bound)."""
        server, task = self._server, self._task
        self._server = self._task = None
        if server is None or task is None:
            return
        server.should_exit = True
        with contextlib.suppress(Exception):
            await task
