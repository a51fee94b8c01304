"""The app's store follows the daemon's change feed, against a real daemon: an engine started
by another client shows on the Engines page with no listing asked for, and a broken stream
resumes after the last event it applied (no reset, nothing missed)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtWidgets import QApplication

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.events import FeedEvent
from roundhouse.api.instances import InstanceList, StartRequest
from roundhouse.api.settings import Settings
from roundhouse.base.paths import resolve_home
from roundhouse.client import DaemonClient, DaemonUnreachableError
from roundhouse.gui.app import Ui
from roundhouse.gui.backoff import Backoff
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.pages.engines_page import EnginesPage
from tests.daemon_process import DaemonProcess
from tests.gui.conftest import close_bridge, wait_until


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
