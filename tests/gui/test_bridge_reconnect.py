"""A request in flight while the app reconnects to its daemon, against a real daemon: it is
answered on the client it started with (which the reconnect retires, not closes under it),
and that client is closed once the request ends."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import qasync

from roundhouse.api.settings import Settings
from roundhouse.base.paths import resolve_home
from roundhouse.client import DaemonClient
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from tests.daemon_process import DaemonProcess
from tests.gui.conftest import close_bridge, wait_until


def test_a_request_running_across_a_reconnect_is_answered_then_its_client_closed(
    qloop: qasync.QEventLoop, daemon: DaemonProcess, home_root: Path
) -> None:
    bridge = DaemonBridge(resolve_home(home_root), auto_start=False)
    release = asyncio.Event()
    used: list[DaemonClient] = []
    answers: list[Any] = []

    async def slow(client: DaemonClient) -> Settings:
        # Asks the daemon twice, with the reconnect in between (as a read-change-save does).
        used.append(client)
        await client.settings()
        await release.wait()
        return await client.settings()

    async def scenario() -> None:
        bridge.start()
        await wait_until(lambda: bridge.state == ConnectionState.CONNECTED, 20, "connected")
        call = bridge.call("read the settings slowly", slow)
        call.succeeded.connect(answers.append)
        call.failed.connect(answers.append)
        await wait_until(lambda: bool(used), 10, "the request started")
        first = used[0]

        bridge.retry()  # what the banner's Retry does: a new session, a new client
        await wait_until(lambda: bridge._client not in (None, first), 20, "a new client")
        await wait_until(lambda: bridge.state == ConnectionState.CONNECTED, 20, "reconnected")
        assert not first._http.is_closed, "the client was closed under a running request"

        release.set()
        await wait_until(lambda: bool(answers), 10, "the request answered")
        assert isinstance(answers[0], Settings), answers[0]
        assert first._http.is_closed, "the retired client was left open"
        # The new session's client is unaffected and serves the next request.
        assert bridge._client is not None and not bridge._client._http.is_closed
        again: list[Any] = []
        follow_up = bridge.settings.get()
        follow_up.succeeded.connect(again.append)
        follow_up.failed.connect(again.append)
        await wait_until(lambda: bool(again), 10, "the next request answered")
        assert isinstance(again[0], Settings), again[0]

    try:
        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, bridge)
