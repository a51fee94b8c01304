"""The Engines page against a real daemon: every runnable engine, llama.cpp found, Refresh."""

from __future__ import annotations

import asyncio
from pathlib import Path

import qasync
from PySide6.QtWidgets import QApplication

from roundhouse.api.engines import EngineId, LaunchStyle
from roundhouse.base.paths import resolve_home
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.gui.app import Ui, build_ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.engines_page import EnginesPage
from tests.daemon_process import DaemonProcess
from tests.engines.llama_server import find_llama_server
from tests.gui.conftest import wait_until

# Attach-only families (an OpenAI-compatible server, exo) have no card: nothing to install.
RUNNABLE = [s.id for s in load_catalog().engines if s.launch != LaunchStyle.ATTACH]


def _engines_page(ui: Ui) -> EnginesPage:
    page = ui.window.show_page("Engines")
    assert isinstance(page, EnginesPage)
    return page


def _open(qapp: QApplication, daemon: DaemonProcess) -> tuple[Ui, EnginesPage]:
    ui = build_ui(qapp, daemon.home, auto_start=False, tray_available=False)
    page = _engines_page(ui)
    ui.window.show()
    return ui, page


def test_page_comes_after_hardware_and_waits_for_the_daemon(
    qapp: QApplication, home_root: Path
) -> None:
    ui = build_ui(qapp, resolve_home(home_root), auto_start=False, tray_available=False)
    titles = [ui.window.navigation.item(row).text() for row in range(ui.window.navigation.count())]
    assert titles.index("Engines") == titles.index("Hardware") + 1
    page = _engines_page(ui)
    assert page.cards == {}
    assert not page.refresh_button.isEnabled()
    ui.window.deleteLater()


def test_page_lists_every_runnable_engine_and_finds_llama_server(
    qapp: QApplication, qloop: qasync.QEventLoop, llama_daemon: DaemonProcess
) -> None:
    ui, page = _open(qapp, llama_daemon)
    failures: list[str] = []
    ui.bridge.engines_failed.connect(failures.append)

    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, what="connected")
        await wait_until(lambda: bool(page.cards), 15, "the engines")
        assert failures == []
        assert list(page.cards) == RUNNABLE
        assert EngineId.OPENAI_COMPATIBLE not in page.cards
        assert page.status_label.text().startswith("Engines found at ")

        llama = page.card(EngineId.LLAMA_CPP)
        status = llama.status_text()
        assert status.startswith("Found: llama-server ")
        assert "on PATH" in status
        assert str(find_llama_server()) in status
        overview = ui.bridge.engines
        assert overview is not None
        hit = next(h for h in overview.detection.found if h.id == EngineId.LLAMA_CPP)
        assert hit.version and hit.version in status
        assert llama.formats.text() == "GGUF"
        assert "Linux x86_64" in llama.platforms.text()
        assert llama.looked_in_button.isHidden()
        assert llama.build.text() == (hit.build_info or "")
        for engine, card in page.cards.items():
            assert card.status_text().startswith(("Found: ", "Not found: ")), engine

        page.refresh_button.click()
        assert not page.refresh_button.isEnabled()
        assert page.status_label.text() == "Looking for engines again…"
        await wait_until(page.refresh_button.isEnabled, 15, "the refreshed engines")
        assert page.status_label.text().startswith("Engines found at ")
        assert list(page.cards) == RUNNABLE
        assert page.card(EngineId.LLAMA_CPP).status_text() == status

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
        ui.window.deleteLater()


def test_missing_engines_say_why_and_fold_out_where_and_stay_when_disconnected(
    qapp: QApplication, qloop: qasync.QEventLoop, daemon: DaemonProcess
) -> None:
    ui, page = _open(qapp, daemon)

    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(lambda: bool(page.cards), 20, "the engines")
        assert list(page.cards) == RUNNABLE
        overview = ui.bridge.engines
        assert overview is not None
        # No Python environment is chosen in a fresh home: vLLM cannot be found.
        missing = next(m for m in overview.detection.missing if m.id == EngineId.VLLM)
        card = page.card(EngineId.VLLM)
        assert card.status_text() == f"Not found: {missing.why}"
        if missing.looked_in:
            assert card.looked_in_button.text().startswith(
                f"Looked in {len(missing.looked_in)} place"
            )
            assert card.looked_in.isHidden()
            card.looked_in_button.click()
            assert card.looked_in.isVisible()
            assert missing.looked_in[0] in card.looked_in.text()
            card.looked_in_button.click()
            assert card.looked_in.isHidden()

        await asyncio.to_thread(daemon.stop)
        await wait_until(lambda: ui.bridge.state == ConnectionState.DISCONNECTED, 10, "the loss")
        assert page.status_label.text().startswith("Showing the last known engines")
        assert not page.refresh_button.isEnabled()
        assert list(page.cards) == RUNNABLE

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())
        ui.window.deleteLater()
