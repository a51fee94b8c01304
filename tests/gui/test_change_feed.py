"""The app's store follows the daemon's change feed, against a real daemon: an engine started
by another client shows on the Engines page with no listing asked for, a broken stream
resumes after the last event it applied (no reset, nothing missed), the log window reads
a running llama-server's new lines when the feed's count moves, not on a clock, and the Chat
page and quick chat show the active model from the store without asking the gateway."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import qasync
from PySide6.QtWidgets import QApplication

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.events import FeedEvent
from roundhouse.api.gateway import GatewayModelList
from roundhouse.api.instances import InstanceList, InstanceLogs, InstanceStatus, StartRequest
from roundhouse.api.settings import Settings
from roundhouse.base.paths import resolve_home
from roundhouse.client import DaemonClient, DaemonUnreachableError
from roundhouse.gui.app import Ui
from roundhouse.gui.backoff import Backoff
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.dialogs.log_dialog import LogDialog
from roundhouse.gui.pages.chat_page import ChatPage
from roundhouse.gui.pages.engines_page import EnginesPage
from tests.daemon_process import DaemonProcess, wait_settled
from tests.gui.conftest import close_bridge, wait_until
from tests.gui.serving import run, tray_ui


def _count_listings(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every GET of the instance list the app sends, by when."""
    asked: list[float] = []
    listed = DaemonClient.instances

    async def counting(self: DaemonClient) -> InstanceList:
        asked.append(time.monotonic())
        return await listed(self)

    monkeypatch.setattr(DaemonClient, "instances", counting)
    return asked


def test_an_engine_started_elsewhere_shows_through_the_feed(
    ui: Ui,
    qloop: qasync.QEventLoop,
    llama_daemon: DaemonProcess,
    tiny_gguf: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = _count_listings(monkeypatch)

    async def scenario() -> None:
        page = ui.window.show_page("Engines")
        assert isinstance(page, EnginesPage)
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        await wait_until(lambda: ui.bridge.instances is not None, 10, "the first listing")
        assert len(asked) == 1, "listed once, as the feed began"
        section = page.instances

        # Another client (the CLI, a script) starts an engine: the page shows it, and its
        # way to ready, from the feed alone.
        options = InstanceOptions(model=str(tiny_gguf), ctx_size=512, parallel=1)
        request = StartRequest(engine=EngineId.LLAMA_CPP, options=options)
        async with DaemonClient.for_home(ui.bridge.home) as client:
            started = await client.start_instance(request)

        def row_status() -> str:
            row = section.model.row_of(started.id)
            return section.row_texts()[row]["Status"] if row is not None else ""

        await wait_until(lambda: row_status() != "", 10, "the row of the engine started elsewhere")
        await wait_until(lambda: row_status() == "ready", 60, "the row to say ready")
        assert ui.bridge.feed_seq is not None
        assert len(asked) == 1, f"the instance list was asked for {len(asked)} times, not fed"

        async with DaemonClient.for_home(ui.bridge.home) as client:
            await client.stop_instance(started.id)
        await wait_until(lambda: section.model.row_of(started.id) is None, 30, "the row to go")
        assert len(asked) == 1

    try:
        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, ui.bridge)


def test_a_broken_feed_resumes_after_its_last_event(
    qapp: QApplication,
    qloop: qasync.QEventLoop,
    daemon: DaemonProcess,
    home_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = _count_listings(monkeypatch)
    followed = DaemonClient.events
    sinces: list[int | None] = []
    cut = [False]

    async def breaking(self: DaemonClient, since: int | None = None) -> AsyncIterator[FeedEvent]:
        """The daemon's feed, broken (as a lost connection) at the first event after `cut`."""
        sinces.append(since)
        async for event in followed(self, since):
            if cut[0]:
                cut[0] = False
                raise DaemonUnreachableError("The live stream broke (cut by the test).")
            yield event

    monkeypatch.setattr(DaemonClient, "events", breaking)
    # Long enough a wait before reconnecting for the test to change something meanwhile.
    bridge = DaemonBridge(resolve_home(home_root), auto_start=False, backoff=Backoff(first_s=2.0))
    resets: list[None] = []
    bridge.feed_reset.connect(lambda: resets.append(None))

    async def save(settings: Settings, keep_serving: bool) -> Settings:
        ui = settings.ui.model_copy(update={"keep_serving_on_close": keep_serving})
        async with DaemonClient.for_home(bridge.home) as client:
            return await client.put_settings(settings.model_copy(update={"ui": ui}))

    async def scenario() -> None:
        bridge.start()
        await wait_until(lambda: bridge.state == ConnectionState.CONNECTED, 20, "connected")
        await wait_until(lambda: len(resets) == 1, 10, "the first reset")
        assert sinces == [None] and len(asked) == 1
        async with DaemonClient.for_home(bridge.home) as client:
            settings = await client.settings()
        keep = settings.ui.keep_serving_on_close
        applied = bridge.feed_seq
        assert applied is not None

        # The next event breaks the stream before the app applies it; while the app waits
        # to reconnect, another change is made.
        cut[0] = True
        settings = await save(settings, not keep)
        await wait_until(lambda: bridge.state == ConnectionState.DISCONNECTED, 10, "the break")
        assert bridge.ui_settings.keep_serving_on_close == keep, "the cut event was applied"
        await save(settings, keep)
        await wait_until(lambda: bridge.state == ConnectionState.CONNECTED, 20, "reconnected")
        await wait_until(lambda: (bridge.feed_seq or 0) > applied + 1, 10, "both events")

        assert sinces == [None, applied], "the feed resumed after the last event applied"
        assert len(resets) == 1, "a resumed feed needs no reset"
        assert len(asked) == 1, "nothing was listed again"
        assert bridge.settings_full is not None
        assert bridge.settings_full.ui.keep_serving_on_close == keep

    try:
        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, bridge)


def test_the_log_window_shows_new_lines_when_the_feed_says_so_not_on_a_clock(
    ui: Ui,
    qloop: qasync.QEventLoop,
    llama_daemon: DaemonProcess,
    tiny_gguf: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[float] = []
    read_logs = DaemonClient.instance_logs

    async def counting(
        self: DaemonClient, instance_id: str, since: int = 0, limit: int = 500
    ) -> InstanceLogs:
        reads.append(time.monotonic())
        return await read_logs(self, instance_id, since, limit)

    monkeypatch.setattr(DaemonClient, "instance_logs", counting)

    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        options = InstanceOptions(model=str(tiny_gguf), ctx_size=512, parallel=1)
        request = StartRequest(engine=EngineId.LLAMA_CPP, options=options)
        async with DaemonClient.for_home(ui.bridge.home) as client:
            started = await client.start_instance(request)
            ready = await wait_settled(client, started.id, 90)
        assert ready.status is InstanceStatus.READY
        dialog = LogDialog(ui.bridge, ready)
        try:
            dialog.show()
            await wait_until(lambda: len(dialog.lines()) > 5, 10, "the log so far")
            assert any("llama" in line or "tiny.gguf" in line for line in dialog.lines())
            shown = len(dialog.lines())

            # Nothing written: nothing read (a poll would have read several times by now).
            # The engine's last lines after ready are read first.
            def caught_up() -> bool:
                count = ui.bridge.log_counts.get(started.id)
                return count is not None and dialog._since >= count.lines

            await wait_until(caught_up, 10, "the window to hold every line written")
            await asyncio.sleep(1.0)
            assert not dialog._timer.isActive(), "no retry waiting"
            quiet = len(reads)
            written = ui.bridge.log_counts[started.id].lines
            await asyncio.sleep(2.0)
            # The engine may write a line of its own meanwhile (a slow health probe's): a read
            # then follows the count, as it should; with no line written there is no read.
            if ui.bridge.log_counts[started.id].lines == written:
                assert len(reads) == quiet, (
                    f"read {len(reads) - quiet} times while the engine was quiet"
                )
            quiet = len(reads)
            assert not dialog._timer.isActive(), "no clock runs while the engine is quiet"

            # A request makes the engine write: the feed's count moves, the window reads
            # the new lines (only those), and shows them.
            served = (
                next(m.id for m in ui.bridge.gateway_models.models if m.instance == started.id)
                if ui.bridge.gateway_models is not None
                else None
            )
            assert served is not None, "the gateway's models come by the feed"
            async with httpx.AsyncClient(trust_env=False, timeout=60) as http:
                chat = await http.post(
                    f"{llama_daemon.url}/v1/chat/completions",
                    json={
                        "model": served,
                        "max_tokens": 4,
                        "messages": [{"role": "user", "content": "hi"}],
                    },
                )
            assert chat.status_code == 200, chat.text
            await wait_until(lambda: len(dialog.lines()) > shown, 10, "the request's lines")
            count = ui.bridge.log_counts[started.id]
            await wait_until(lambda: dialog._since >= count.lines, 10, "the count caught up")
            assert not dialog._timer.isActive()
            assert len(reads) - quiet <= 6, "a few reads for a burst, not a poll"
        finally:
            dialog.close()
            async with DaemonClient.for_home(ui.bridge.home) as client:
                await client.stop_instance(started.id)

    try:
        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, ui.bridge)


def test_the_chat_page_and_quick_chat_read_the_active_model_from_the_store(
    qapp: QApplication,
    qloop: qasync.QEventLoop,
    llama_daemon: DaemonProcess,
    home_root: Path,
    tiny_gguf: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listings: list[float] = []
    listed = DaemonClient.gateway_models

    async def counting(self: DaemonClient) -> GatewayModelList:
        listings.append(time.monotonic())
        return await listed(self)

    monkeypatch.setattr(DaemonClient, "gateway_models", counting)
    ui = tray_ui(qapp, home_root)

    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        options = InstanceOptions(model=str(tiny_gguf), ctx_size=512, parallel=1)
        request = StartRequest(engine=EngineId.LLAMA_CPP, options=options)
        async with DaemonClient.for_home(ui.bridge.home) as client:
            started = await client.start_instance(request)
            await wait_settled(client, started.id, 90)

        def served() -> str | None:
            held = ui.bridge.gateway_models
            found = [m for m in held.models if m.instance == started.id] if held else []
            return found[0].id if found and held and held.active_model == found[0].id else None

        await wait_until(lambda: served() is not None, 20, "the gateway's models in the store")
        model_id = served()
        before = len(listings)

        page = ui.window.show_page("Chat")
        assert isinstance(page, ChatPage)
        await wait_until(
            lambda: page.picker.current_model() == model_id, 10, "the Chat page's model"
        )
        assert ui.quick_chat is not None
        ui.quick_chat.shortcut.activated.emit()
        window = ui.quick_chat.window
        assert window is not None
        await wait_until(lambda: model_id in window.model_line.label.text(), 10, "quick chat's")
        assert len(listings) == before, "shown from the store: the gateway was not asked"

    try:
        run(ui, qloop, scenario())  # the daemon stops its engine with it
    finally:
        ui.window.deleteLater()
