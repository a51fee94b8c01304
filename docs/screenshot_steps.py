"""The screenshot script's steps: each brings one part of the app into a state worth showing
(a running instance, a streamed reply, a download half way) and grabs it."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.fakes.hub import HubStandin
    from tests.fakes.releases.server import ReleaseServer

    from roundhouse.gui.app import Ui
    from roundhouse.gui.pages.engines_page import EnginesPage
    from roundhouse.gui.pages.models_page import ModelsPage

REPO = Path(__file__).resolve().parent.parent
SCREEN = (1400, 900)
PANEL_HEIGHT = 28
# grab(name, window_only=True, widget=None): saves the window, a widget or the whole screen.
Grab = Callable[..., None]


async def wait_until(predicate: Callable[[], bool], within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def take_instances(ui: Ui, page: EnginesPage, model: Path, grab: Grab) -> None:
    """The start dialog, a running llama-server in the table, and its live log."""
    from roundhouse.api.engines import EngineId

    dialog = page.open_start_dialog(EngineId.LLAMA_CPP)
    dialog.model_edit.setText(str(model))
    dialog.ctx_size.setValue(4096)
    dialog.parallel.setValue(2)
    dialog.gpu_layers_choice.setCurrentIndex(dialog.gpu_layers_choice.findText("auto"))
    dialog.flash_attn.setCurrentIndex(dialog.flash_attn.findText("auto"))
    # The tiny model's heads (16 wide) cannot take a q8_0 cache: f16 it is.
    dialog.cache_type_k.setCurrentText("f16")
    dialog.cache_type_v.setCurrentText("f16")
    dialog.advanced_button.setChecked(True)
    dialog.extra_args.setText("--seed 42")
    dialog.save_preset_as("4k context, 2 slots")
    await wait_until(lambda: bool(dialog.preset_names()), 10, "the saved preset")
    await asyncio.sleep(0.8)
    grab("start-dialog.png", widget=dialog)
    dialog.start()
    await wait_until(lambda: page.start_dialog is None, 20, "the start")
    section = page.instances

    def ready() -> bool:
        status = section.row_texts()[0]["Status"] if section.row_texts() else ""
        if status.startswith("failed"):
            raise RuntimeError(f"the instance {status}")
        return status == "ready"

    await wait_until(ready, 60, "a ready instance")
    await asyncio.sleep(2.5)  # an uptime of a few seconds, the memory measured
    grab("engines-instances.png")
    logs = section.open_logs_of_selected()
    assert logs is not None
    logs.resize(1000, 620)
    logs.move(ui.window.x() + 160, ui.window.y() + 120)
    await wait_until(lambda: len(logs.lines()) > 6, 20, "log lines")
    await asyncio.sleep(1.0)
    grab("engine-logs.png", widget=logs)
    logs.close()
    await take_metrics(ui, page, grab)
    await take_use_with(ui, page, grab)
    info = section.selected()
    assert info is not None
    section.stop_selected()
    try:
        await wait_until(lambda: section.model.row_of(info.id) is None, 60, "the stop")
    except RuntimeError as exc:
        raise RuntimeError(f"{exc}: {section.message_label.text()} {section.row_texts()}") from exc


async def take_metrics(ui: Ui, page: EnginesPage, grab: Grab) -> None:
    """The running llama-server's own metrics, after it answered a few requests."""
    import httpx

    section = page.instances
    info = section.selected()
    assert info is not None
    async with httpx.AsyncClient(base_url=info.base_url, timeout=30) as engine:
        for prompt in ("Hello", "Tell me about trains", "What is a roundhouse?"):
            body = {"model": "x", "prompt": prompt, "max_tokens": 24}
            await engine.post("/completions", json=body)
    metrics = section.open_metrics_of_selected()
    assert metrics is not None
    metrics.move(ui.window.x() + 380, ui.window.y() + 160)
    await wait_until(lambda: bool(metrics.values()), 20, "the metrics")
    await asyncio.sleep(0.8)
    grab("metrics.png", widget=metrics)
    metrics.close()


async def take_use_with(ui: Ui, page: EnginesPage, grab: Grab) -> None:
    """Use with… for the running model: Claude Code's settings (no key set yet: the
    placeholder, and the note saying what a key changes)."""
    dialog = page.instances.open_use_with_selected()
    assert dialog is not None
    dialog.resize(900, 560)
    dialog.move(ui.window.x() + 200, ui.window.y() + 110)
    await wait_until(lambda: dialog.model_combo.count() > 0, 20, "the models")
    dialog.clients.setCurrentRow(0)
    await asyncio.sleep(0.8)
    grab("use-with.png", widget=dialog)
    dialog.close()


EXAMPLE_REPLY = """Start it as a child process and wait for its health check:

```python
import subprocess

server = subprocess.Popen(
    ["llama-server", "-m", "model.gguf", "--port", "8080", "-c", "4096"]
)
```

Then poll `http://127.0.0.1:8080/health` until it answers **200**; never sleep a fixed time.
"""


async def start_served_model(ui: Ui, model: Path) -> tuple[str, str]:
    """Start the tiny model through the daemon; its instance id and the gateway's name for
    it (the name the chat and the active model use, not the file's path)."""
    from roundhouse.api.engines import EngineId, InstanceOptions
    from roundhouse.api.instances import InstanceStatus, StartRequest
    from roundhouse.client import DaemonClient

    async with DaemonClient.for_home(ui.bridge.home) as client:
        options = InstanceOptions(model=str(model), ctx_size=2048, parallel=1)
        info = await client.start_instance(StartRequest(engine=EngineId.LLAMA_CPP, options=options))
        deadline = time.monotonic() + 60
        while info.status != InstanceStatus.READY:
            if info.status == InstanceStatus.FAILED or time.monotonic() > deadline:
                raise RuntimeError(f"the chat's instance did not start: {info.error}")
            await asyncio.sleep(0.2)
            info = await client.instance(info.id)
        while not (named := [m.id for m in (await client.gateway_models()).models
                             if m.instance == info.id]):  # fmt: skip
            if time.monotonic() > deadline:
                raise RuntimeError("the gateway does not list the chat's model")
            await asyncio.sleep(0.2)
    return info.id, named[0]


async def take_chat(ui: Ui, model_id: str, grab: Grab) -> None:
    """The Chat page: an example exchange (Markdown, code, folded reasoning), then a live
    reply from the tiny model with its figures."""
    from roundhouse.api.chat import NewConversation, NewMessage, Role
    from roundhouse.client import DaemonClient
    from roundhouse.gui.pages.chat_page import ChatPage

    example = [
        NewMessage(role=Role.USER, content="How do I start llama-server from Python?"),
        NewMessage(
            role=Role.ASSISTANT,
            content=EXAMPLE_REPLY,
            reasoning="The user wants a subprocess; mention the health check.",
        ),
    ]
    new = NewConversation(title="llama-server from Python", model=model_id, messages=example)
    async with DaemonClient.for_home(ui.bridge.home) as client:
        chat = await client.create_chat(new)
    page = ui.window.show_page("Chat")
    assert isinstance(page, ChatPage)
    page.refresh()
    await wait_until(lambda: chat.id in page.conversations.ids(), 10, "the conversation")
    page.open_conversation(chat.id)
    await wait_until(lambda: len(page.transcript.messages) == 2, 10, "its messages")
    page.settings.max_tokens.setValue(40)
    page.input.setPlainText("And the same with a 2048-token context?")
    page.send()
    await wait_until(lambda: len(page.transcript.messages) == 4 and not page.busy, 60, "a reply")
    # A second version of the live reply: its "‹ 2/2 ›" switcher shows, the first one kept.
    first = page.transcript.messages[3].message
    page.transcript.messages[3].regenerate_button.click()
    await wait_until(
        lambda: (
            not page.busy
            and len(page.transcript.messages) == 4
            and page.transcript.messages[3].message not in (None, first)
        ),
        60,
        "a second version",
    )
    page.input.setPlainText("Thanks! Which port does the gateway use?")
    await asyncio.sleep(0.8)
    grab("chat.png")


async def take_quick_chat(ui: Ui, model_id: str, grab: Grab) -> None:
    """The quick chat window bound to the active model, a reply streamed into it."""
    from roundhouse.api.chat import SamplingParams

    active, quick = ui.active_model, ui.quick_chat
    assert active is not None and quick is not None
    active.refresh()
    await wait_until(lambda: active.find(model_id) is not None, 10, "the model listed")
    active.choose(model_id)
    await wait_until(lambda: active.active == model_id, 10, "the active model")
    window = quick.open()
    window.params = SamplingParams(max_tokens=32, temperature=0)
    window.input.setText("What is a roundhouse?")
    window.send()
    await wait_until(lambda: not window.streaming, 60, "the quick reply")
    window.input.setText("And a turntable?")
    await asyncio.sleep(0.8)
    grab("quick-chat.png", widget=window)
    window.hide()
    await asyncio.sleep(0.3)


async def take_attach_dialog(ui: Ui, page: EnginesPage, grab: Grab) -> None:
    """Attaching a server that does not answer: the daemon's refusal, in the dialog."""
    sys.path.insert(0, str(REPO))
    from tests.processes import free_port

    ui.window.show_page("Engines")
    dialog = page.instances.open_attach_dialog()
    dialog.url_edit.setText(f"http://127.0.0.1:{free_port()}/v1")
    dialog.key_edit.setText("sk-not-a-real-key")
    dialog.name_edit.setText("LM Studio on the desk")
    dialog.attach()
    await wait_until(lambda: bool(dialog.error_text()), 20, "the refusal")
    await asyncio.sleep(0.6)
    grab("attach-dialog.png", widget=dialog)
    dialog.reject()
    await asyncio.sleep(0.3)


async def take_ollama(ui: Ui, grab: Grab) -> None:
    """The Ollama page with two models pulled and one loaded."""
    from roundhouse.gui.pages.ollama_page import OllamaPage

    page = ui.window.show_page("Ollama")
    assert isinstance(page, OllamaPage)
    await wait_until(lambda: page.base_url is not None, 20, "Ollama's models")
    for name in ("tiny", "small"):
        page.pull_view.pull(name)
        await wait_until(lambda: not page.pull_view.running, 60, f"the pull of {name}")
    await wait_until(lambda: page.models.rowCount() == 2, 10, "both models")
    page.select_model("small:latest")
    page.keep_alive.setCurrentIndex(page.keep_alive.findText("30 minutes"))
    page.context.setValue(8192)
    page.load_button.click()
    await wait_until(lambda: page.loaded.rowCount() == 1, 20, "the load")
    page.pull_view.name_edit.setText("small")
    page.select_loaded("small:latest")
    await asyncio.sleep(1.0)
    grab("ollama.png")


async def take_settings(ui: Ui, grab: Grab) -> None:
    """The engine settings being edited; then, reverted, the Gateway section with a second
    address and a key just generated (the daemon keeps it in the script's file keyring)."""
    from PySide6.QtWidgets import QScrollArea

    from roundhouse.gui.pages.settings_page import SettingsPage

    sys.path.insert(0, str(REPO))
    from tests.processes import free_port

    page = ui.window.show_page("Settings")
    assert isinstance(page, SettingsPage)
    await wait_until(lambda: page.settings is not None, 10, "the settings")
    page.engines.pythons.add("/opt/venvs/vllm/bin/python")
    page.engines.pythons.add("/usr/local/bin/python3.12")
    page.engines.ready_timeout.setValue(900)
    engines_scroll = page.findChild(QScrollArea)
    assert engines_scroll is not None
    engines_scroll.verticalScrollBar().setValue(page.engines.y() - 8)
    await asyncio.sleep(0.6)
    grab("settings.png")

    page.reload()
    await wait_until(lambda: not page.changed(), 10, "the settings read again")
    section = page.gateway
    section.listen_host.setText("127.0.0.1")
    section.listen_port.setValue(free_port())
    section.idle_ttl.setValue(900)
    section.cors_origins.setText("http://localhost:3000")
    page.save()
    await wait_until(lambda: page.message.text().startswith("Saved"), 10, "the save")
    await wait_until(lambda: section.status is not None, 10, "the gateway's state")
    section.generate_button.click()
    await wait_until(lambda: "key required" in section.listeners_text(), 10, "the key")
    scroll = page.findChild(QScrollArea)
    assert scroll is not None
    scroll.verticalScrollBar().setValue(section.y() - 8)
    await asyncio.sleep(0.6)
    grab("settings-gateway.png")


async def take_install_progress(
    ui: Ui, page: EnginesPage, releases: ReleaseServer, grab: Grab
) -> None:
    """A second llama.cpp build being downloaded, caught half way (the server is slowed)."""
    ui.window.show_page("Engines")
    dialog = page.open_builds_dialog()
    dialog.resize(820, 560)
    dialog.move(ui.window.x() + 240, ui.window.y() + 120)
    dialog.another_button.setChecked(True)
    dialog.tag_edit.setText("b6000")
    releases.modes.delay_per_chunk_s = 0.0
    dialog.install_another()
    await wait_until(lambda: dialog.tags() == ["b6000"], 60, "the first build")
    releases.modes.delay_per_chunk_s = 0.12
    dialog.tag_edit.setText("b6100")
    dialog.install_another()
    bar = dialog.install_view.bar
    await wait_until(lambda: bar.maximum() > 0 and bar.value() > 380, 60, "half the download")
    grab("install-progress.png", widget=dialog)
    dialog.install_view.cancel()
    await wait_until(lambda: not dialog.install_view.running, 20, "the cancel")
    dialog.reject()
    await asyncio.sleep(0.3)


async def take_tray(ui: Ui, grab: Grab, *, serving: bool) -> None:
    """The desktop with the tray icon (serving, when a model runs), then its menu with the
    instances and the Active model submenu open."""
    from PySide6.QtCore import QPoint

    tray, active = ui.tray, ui.active_model
    assert tray is not None and active is not None
    ui.window.show_page("Hardware")
    if serving:
        await wait_until(lambda: tray.status.serving > 0, 10, "the serving icon")
    await asyncio.sleep(0.5)
    grab("desktop-with-tray.png", window_only=False)

    # A Scan, as a user would after pulling: the Ollama found at start-up had no models yet,
    # and an engine found running is listed with the models its scan saw.
    scan = ui.bridge.scan_instances()
    await wait_until(lambda: scan.done, 20, "the scan")
    active.refresh()
    await wait_until(lambda: active.loaded, 10, "the models")
    tray.menu.popup(QPoint(SCREEN[0] - 260, PANEL_HEIGHT + 2))
    await asyncio.sleep(0.6)
    tray.menu.setActiveAction(tray.models_menu.menuAction())
    await wait_until(tray.models_menu.isVisible, 5, "the Active model menu")
    await asyncio.sleep(0.8)
    grab("tray-menu.png", window_only=False)
    tray.models_menu.hide()
    tray.menu.hide()
    await asyncio.sleep(0.3)


def start_hub_standin(tmp: Path) -> tuple[HubStandin, dict[str, str]]:
    """The local Hugging Face Hub stand-in over the tests' tiny repos, and the environment
    that points a daemon at it (its downloads go to a Hugging Face cache in `tmp`)."""
    sys.path.insert(0, str(REPO))
    from tests.fakes.hub import hub_env, start_hub
    from tests.fakes.hub.build import build_test_repos

    hub = start_hub(build_test_repos(tmp / "hub-repos"))
    return hub, {**hub_env(hub), "HF_HOME": str(tmp / "hf")}


async def take_models(ui: Ui, hub: HubStandin, grab: Grab) -> None:
    """The Models page: a search with fit badges and a model's files; two downloads under
    way (the Hub is slowed down), one paused; then the library with what they brought."""
    from roundhouse.api.downloads import DownloadState
    from roundhouse.gui.pages.models_page import DOWNLOADS_TAB, LIBRARY_TAB, SEARCH_TAB, ModelsPage

    sys.path.insert(0, str(REPO))
    from tests.fakes.hub.build import GGUF_REPO

    page = ui.window.show_page("Models")
    assert isinstance(page, ModelsPage)
    search, details, panel = page.search, page.details, page.downloads
    await wait_until(lambda: not search.busy and search.results.rowCount() > 0, 20, "a search")
    search.query_edit.setText("tiny")
    search.search()
    await wait_until(lambda: not search.busy, 20, "the search")

    def settled() -> bool:
        badges = search.results.badge_texts()
        return len(badges) == search.results.rowCount() and "estimating…" not in badges.values()

    await wait_until(settled, 30, "the fit badges")
    search.select_repo(GGUF_REPO)
    await wait_until(lambda: details.details is not None, 20, "the model's page")
    await wait_until(lambda: "estimating…" not in details.groups.badge_texts().values(), 20, "fits")
    details.select_group("Q4_K_M")
    await asyncio.sleep(0.8)
    grab("models-search.png")

    hub.set_faults({"repo": "*", "path": "*.gguf", "throttle_bps": 40_000})
    for group in ("Q8_0", "F16"):
        details.select_group(group)
        details.download_selected()
        queued = f"Queued {group}"
        await wait_until(lambda q=queued: q in details.message_label.text(), 20, queued)
    page.show_tab(DOWNLOADS_TAB)
    # Three files, and the Ollama page's pull before them.
    await wait_until(lambda: len(panel.rows) >= 3, 10, "three files")
    first = panel.row_for("tiny-llama-Q8_0.gguf")
    assert first is not None
    await wait_until(lambda: first.item.bytes_done > 150_000, 20, "progress")
    first.pause_button.click()
    await wait_until(lambda: first.item.state == DownloadState.PAUSED, 10, "the pause")
    await asyncio.sleep(1.5)
    grab("models-downloads.png")
    hub.clear_faults()
    first.resume_button.click()

    def all_done() -> bool:
        return all(row.item.state == DownloadState.DONE for row in panel.rows.values())

    await wait_until(all_done, 60, "the downloads")
    page.show_tab(LIBRARY_TAB)
    await wait_until(lambda: page.library.models.rowCount() >= 2, 20, "the library")
    await wait_until(
        lambda: "estimating…" not in page.library.models.badge_texts().values(), 20, "fits"
    )
    page.library.view.selectRow(0)
    await asyncio.sleep(0.8)
    grab("models-library.png")
    await take_library_start(page, grab)
    page.show_tab(SEARCH_TAB)


async def take_library_start(page: ModelsPage, grab: Grab) -> None:
    """A Library model started from its row: the start dialog with the values llama-server
    will run with filled in, then the row running with Chat and Stop; stopped again."""
    library = page.library
    model = library.selected()
    dialog = library.start_selected()
    if model is None or dialog is None:
        print("no model to start in the Library: the start screenshots are left out")
        return
    await wait_until(lambda: not dialog.defaults_label.isHidden(), 20, "the filled-in values")
    await wait_until(lambda: not dialog.fit_line.isHidden(), 20, "the fit line")
    await asyncio.sleep(0.8)
    grab("start-dialog-values.png", widget=dialog)
    # The steps after this one need the Models page, not the chat it would open.
    dialog.open_chat_check.setChecked(False)
    dialog.start()
    await wait_until(lambda: library.start_dialog is None, 20, "the start")

    def running() -> bool:
        row = library.models.row_of(model.id)
        status = library.models.texts()[row]["Status"] if row is not None else ""
        if status == "failed":
            raise RuntimeError(f"{model.name} failed to start")
        return status == "running"

    await wait_until(running, 120, "the model running")
    await asyncio.sleep(0.8)
    grab("models-library-running.png")
    library.running.cells[model.id].stop_button.click()
    await wait_until(lambda: model.id not in library.running.cells, 60, "the stop")


async def take_first_run(ui: Ui, hub: HubStandin, grab: Grab) -> None:
    """The first-run guide's model step: the starters sized for this machine, the recommended
    one being downloaded (the Hub slowed down); then the download cancelled, the guide closed."""
    sys.path.insert(0, str(REPO))
    from tests.fakes.hub.starter_repos import build_starter_repos

    # The starters, under the catalog's own names, beside the tests' repos.
    await asyncio.to_thread(build_starter_repos, hub.repos, None, False)
    hub.reload()
    assert ui.first_run is not None
    wizard = ui.first_run.open()
    wizard.move(ui.window.x() + 260, ui.window.y() + 90)
    await wait_until(lambda: wizard.state.guide is not None, 20, "the guide")
    wizard.next()
    await asyncio.sleep(0.3)  # llama.cpp found on PATH; without it the list shows all the same
    wizard.next()
    model = wizard.model
    await wait_until(lambda: model.starters is not None, 30, "the starters")
    hub.set_faults({"repo": "*", "path": "*.gguf", "throttle_bps": 40_000})
    model.download_button.click()
    panel = model.panel
    await wait_until(lambda: len(panel.rows) == 1, 20, "the download")
    row = next(iter(panel.rows.values()))
    await wait_until(lambda: row.item.bytes_done > 180_000, 30, "progress")
    await asyncio.sleep(0.6)
    grab("first-run.png", widget=wizard)
    hub.clear_faults()
    row.cancel_button.click()
    await wait_until(lambda: not panel.running, 20, "the cancel")
    wizard.skip()
    await asyncio.sleep(0.3)
