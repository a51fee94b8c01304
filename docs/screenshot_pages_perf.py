"""Screenshot steps of the Monitor and Benchmark pages: chats stream through the gateway
while the Monitor draws them; two short benchmarks of the tiny model, compared; a third whose
prompts are too long for the context, with its failures."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from screenshot_steps import Grab, wait_until

if TYPE_CHECKING:
    from roundhouse.gui.app import Ui


async def _chats(ui: Ui, model_id: str, seconds: float) -> None:
    """Chats of 300 tokens, two at a time, through the daemon's gateway for `seconds`."""
    import httpx

    from roundhouse.client import DaemonClient

    async with DaemonClient.for_home(ui.bridge.home) as client:
        base_url = str(client.base_url)
    body = {
        "model": model_id,
        "messages": [{"role": "user", "content": "Tell me about trains."}],
        "max_tokens": 300,
        "stream": True,
    }
    until = time.monotonic() + seconds

    async def one(http: httpx.AsyncClient) -> None:
        while time.monotonic() < until:
            async with http.stream("POST", "/v1/chat/completions", json=body) as reply:
                async for _ in reply.aiter_bytes():
                    pass

    # The gateway on loopback takes no key unless the user set one (the screenshots' home
    # has none).
    async with httpx.AsyncClient(base_url=base_url, timeout=60, trust_env=False) as http:
        await asyncio.gather(one(http), one(http))


async def take_monitor(ui: Ui, model_id: str, grab: Grab) -> None:
    """The Monitor page over a minute in which chats stream now and then."""
    from roundhouse.gui.pages.monitor_page import MonitorPage

    page = ui.window.show_page("Monitor")
    assert isinstance(page, MonitorPage)
    page.window_box.setCurrentIndex(0)  # 1 min
    await wait_until(lambda: page.following, 15, "the metrics stream")
    for _ in range(3):
        await _chats(ui, model_id, 4)
        await asyncio.sleep(2)
    await asyncio.sleep(1.0)
    grab("monitor.png")


async def take_bench(ui: Ui, model_id: str, grab: Grab) -> None:
    """The Benchmark page: two short runs of the tiny model at two concurrencies, compared."""
    from roundhouse.gui.pages.bench_page import BenchPage

    page = ui.window.show_page("Benchmark")
    assert isinstance(page, BenchPage)
    await wait_until(lambda: page.form.picker.findText(model_id) >= 0, 20, "the model listed")
    page.form.picker.set_model(model_id)
    page.form.prompts.setValue(32)
    page.form.input_len.setValue(64)
    page.form.output_len.setValue(64)
    for concurrency in (1, 4):
        page.form.concurrency.setValue(concurrency)
        page.form.label.setText(f"tiny, {concurrency} at a time")
        page.run_button.click()
        await wait_until(lambda: page.job is not None, 10, "the start")
        await wait_until(lambda: page.job is None, 120, "the benchmark")
    await wait_until(lambda: page.results.rowCount() >= 2, 10, "both runs listed")
    page.results.select_ids(page.results.ids()[:2])
    page.buttons["Compare"].click()
    await wait_until(lambda: page.table.columnCount() == 3, 10, "the comparison")
    await asyncio.sleep(0.5)
    grab("benchmark.png")

    # A run whose prompts are around the model's context (2,048 tokens), some longer: those
    # fail, and the page says why and what to change above the table. Started through the
    # daemon, for the prompt lengths' spread and no warm-up, which the form does not offer.
    from roundhouse.api.bench import BenchRequest, BenchState, progress_words
    from roundhouse.client import DaemonClient

    request = BenchRequest(
        model=model_id, num_prompts=8, max_concurrency=2, input_len=1900, output_len=16,
        range_ratio=0.2, warmups=0, label="tiny, some prompts too long",
    )  # fmt: skip
    async with DaemonClient.for_home(ui.bridge.home) as client:
        progress = await client.start_bench(request)
        while progress.state is BenchState.RUNNING:
            await asyncio.sleep(0.3)
            progress = await client.bench_progress(progress.id)
    page.refresh()
    page.show_ids([progress.id])
    # The line the page would show had it run it (it shows the last run it started).
    page.progress_label.setText(progress_words(progress.done, progress.total, progress.failed))
    await wait_until(lambda: page.failures.isVisible(), 20, "the failures banner")
    await asyncio.sleep(0.8)
    grab("benchmark-failures.png")
