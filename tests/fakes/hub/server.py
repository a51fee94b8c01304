"""Binds the two listeners (the Hub and its "CDN", on another port) over one shared state."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer

from tests.fakes.hub.hub_handler import HubHandler
from tests.fakes.hub.serving import BaseHandler, CdnHandler
from tests.fakes.hub.state import HubState


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # many parallel Range downloads connect at once


def _bind(host: str, port: int, base: type[BaseHandler], state: HubState) -> _Server:
    handler = type(base.__name__, (base,), {"state": state})
    return _Server((host, port), handler)


class HubServers:
    """The Hub on `port`, the CDN on `cdn_port` (0: any free port); serve in threads."""

    def __init__(self, state: HubState, host: str, port: int, cdn_port: int) -> None:
        self.state = state
        self.hub = _bind(host, port, HubHandler, state)
        self.cdn = _bind(host, cdn_port, CdnHandler, state)
        state.cdn_port = self.cdn.server_address[1]
        self._threads = [
            threading.Thread(target=s.serve_forever, args=(0.05,), daemon=True)
            for s in (self.hub, self.cdn)
        ]

    def urls(self) -> tuple[str, str]:
        host = str(self.hub.server_address[0])
        return (
            f"http://{host}:{self.hub.server_address[1]}",
            f"http://{host}:{self.state.cdn_port}",
        )

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        for server in (self.hub, self.cdn):
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
