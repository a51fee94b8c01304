"""Screenshot steps with no Hugging Face: the Hub stand-in stopped, the first-run guide lists
the models on this machine first and the bundled starters as needing a download; a search
says at once that it needs a connection."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from screenshot_steps import Grab, wait_until

if TYPE_CHECKING:
    from tests.fakes.hub import HubStandin

    from roundhouse.gui.app import Ui


async def take_offline(ui: Ui, hub: HubStandin, grab: Grab) -> None:
    """Stops the Hub stand-in for good: take it after every step that needs the Hub."""
    from roundhouse.core.models.hub.service import PROBE_KEEP_S
    from roundhouse.gui.pages.models_page import SEARCH_TAB, ModelsPage

    await asyncio.to_thread(hub.stop)
    # The daemon trusts a connection it made this long: after it, it looks again.
    await asyncio.sleep(PROBE_KEEP_S + 0.5)
    assert ui.first_run is not None
    wizard = ui.first_run.open()
    wizard.move(ui.window.x() + 260, ui.window.y() + 90)
    await wait_until(lambda: wizard.state.guide is not None, 20, "the guide")
    wizard.next()
    await asyncio.sleep(0.3)
    wizard.next()
    model = wizard.model
    await wait_until(lambda: model.starters is not None, 30, "the starters, offline")
    await asyncio.sleep(0.6)
    grab("first-run-offline.png", widget=wizard)
    wizard.skip()
    await asyncio.sleep(0.3)

    page = ui.window.show_page("Models")
    assert isinstance(page, ModelsPage)
    page.show_tab(SEARCH_TAB)
    search = page.search
    search.query_edit.setText("qwen3")
    search.search()
    await wait_until(lambda: not search.busy and search.notice.isVisible(), 10, "the notice")
    await asyncio.sleep(0.6)
    grab("models-search-offline.png")
