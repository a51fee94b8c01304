"""The Monitor page shows each instance's gateway circuit, against a real daemon and the real
llama-server: closed while it serves, open once it dies mid-stream, and closed again after
its restart as a new process."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import qasync

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.gateway import CircuitState
from roundhouse.api.instances import StartRequest
from roundhouse.api.settings import GatewaySettings
from roundhouse.client.client import DaemonClient
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.monitor_page import MonitorPage
from roundhouse.gui.widgets.monitor_flags import CIRCUIT_COLUMN
from tests.daemon_process import DaemonProcess, start_ready
from tests.gui.conftest import close_bridge, wait_until

READY_S = 60.0


def test_the_monitor_shows_a_circuit_open_then_closed(
    ui: Ui, qloop: qasync.QEventLoop, llama_daemon: DaemonProcess, tiny_gguf: Path
) -> None:
    async def scenario() -> None:
        # One engine thread: on its default of one per core it starves the app's loop here.
        options = InstanceOptions(
            model=str(tiny_gguf),
            ctx_size=512,
            parallel=2,
            threads=1,
            extra_args=("--context-shift",),
        )
        request = StartRequest(engine=EngineId.LLAMA_CPP, options=options)
        info = await start_ready(llama_daemon, request, READY_S)
        async with DaemonClient(llama_daemon.url, llama_daemon.token) as client:
            settings = await client.settings()
            gateway = GatewaySettings(
                **{
                    **settings.gateway.model_dump(),
                    "circuit_failures": 1,
                    "circuit_backoff_s": 0.2,
                    "circuit_backoff_max_s": 0.5,
                }
            )
            await client.put_settings(settings.model_copy(update={"gateway": gateway}))
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        page = ui.window.show_page(MonitorPage.title)
        assert isinstance(page, MonitorPage)
        await wait_until(lambda: page.flags.row_of(info.id) is not None, 15, "the row")

        def circuit_text() -> str:
            row = page.flags.row_of(info.id)
            return page.flags.cell(row, CIRCUIT_COLUMN).text() if row is not None else ""

        assert circuit_text() == "closed"
        heading = page.flags.table.horizontalHeaderItem(CIRCUIT_COLUMN)
        assert heading is not None and "gateway routes" in heading.toolTip()

        # Killed while a reply streams: the stream ends with an error, the circuit opens.
        body = {
            "model": info.models[0],
            "prompt": "Once upon a time",
            "max_tokens": 100_000,
            "ignore_eos": True,
            "stream": True,
        }
        async with (
            httpx.AsyncClient(base_url=llama_daemon.url, timeout=60, trust_env=False) as http,
            http.stream("POST", "/v1/completions", json=body) as reply,
        ):
            lines = reply.aiter_lines()
            assert (await anext(lines)).startswith("data: ")
            assert info.pid is not None
            os.kill(info.pid, signal.SIGKILL)
            tail = [line async for line in lines]
        assert any(info.id in line and "broke off" in line for line in tail), tail[-3:]
        await wait_until(
            lambda: page.flags.circuits.get(info.id) == CircuitState.OPEN, 10, "the open circuit"
        )

        # Restarted: its row comes back, and its circuit closes, the failures being the old
        # process's; a request through the gateway is answered by it.
        async with DaemonClient(llama_daemon.url, llama_daemon.token) as client:
            await client.restart_instance(info.id)
        await wait_until(lambda: circuit_text() == "closed", 30, "the closed circuit")
        assert page.flags.circuits == {}
        async with httpx.AsyncClient(base_url=llama_daemon.url, timeout=60) as http:
            answer = await http.post(
                "/v1/completions",
                json={"model": info.models[0], "prompt": "Hi", "max_tokens": 2},
            )
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-roundhouse-instance"] == info.id

    try:
        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, ui.bridge)
