"""The start dialog shows the values the engine runs with, and the Library row follows the
start: against a real daemon and the real llama-server. The dialog's context and slots are
what llama-server reports after it starts (/props); the row goes loading, then running, with
Chat (the Chat page opens on the model) and Stop (it stops)."""

from __future__ import annotations

from pathlib import Path

import httpx
import qasync

from roundhouse.api.engines import EngineId
from roundhouse.api.fit import (
    AdviceKind,
    DeviceFit,
    DeviceKind,
    FitAdvice,
    FitEngine,
    FitReport,
    FitVerdict,
    ModelFit,
)
from roundhouse.api.hardware import CpuInfo
from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.api.library import LibraryModel
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.chat_page import ChatPage
from roundhouse.gui.pages.models_page import LIBRARY_TAB, ModelsPage
from roundhouse.gui.widgets.models_library_running import RowActions
from roundhouse.gui.widgets.start_defaults import start_values
from roundhouse.gui.widgets.start_params import spin_value
from tests.daemon_process import DaemonProcess
from tests.gui.conftest import close_bridge, wait_until

READY_S = 60.0


def _engine_key(pid: int) -> str:
    """The key the daemon gave the engine (its environment): the engine's port needs it."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    found = [e.split(b"=", 1)[1] for e in environ if e.startswith(b"LLAMA_API_KEY=")]
    return found[0].decode() if found else ""


def _props(info: InstanceInfo) -> dict[str, object]:
    assert info.pid is not None
    key = _engine_key(info.pid)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    reply = httpx.get(f"{info.url}/props", headers=headers, trust_env=False, timeout=10)
    assert reply.status_code == 200, reply.text
    props = reply.json()
    assert isinstance(props, dict)
    return props


def _argv_value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_the_dialog_shows_what_the_engine_runs_and_the_row_follows_the_start(
    ui: Ui, qloop: qasync.QEventLoop, llama_daemon: DaemonProcess, tiny_gguf: Path
) -> None:
    async def scenario() -> None:
        page = ui.window.show_page(ModelsPage.title)
        assert isinstance(page, ModelsPage)
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        await wait_until(lambda: ui.bridge.engines is not None, 20, "the engines")
        await wait_until(lambda: ui.bridge.inventory is not None, 20, "the hardware")
        page.show_tab(LIBRARY_TAB)
        library = page.library
        library.import_file(str(tiny_gguf))
        await wait_until(lambda: "Imported" in library.message_label.text(), 20, "the import")
        await wait_until(
            lambda: (
                library.find_model(lambda m: bool(m.path) and m.path.endswith("tiny.gguf"))
                is not None
            ),
            20,
            "the imported model",
        )
        found = library.find_model(lambda m: bool(m.path) and m.path.endswith("tiny.gguf"))
        assert isinstance(found, LibraryModel)
        model: LibraryModel = found
        assert library.select_model(model.id)
        assert library.models.texts()[library.models.row_of(model.id) or 0]["Status"] == ""

        # The dialog fills in the values llama-server will run with on this machine.
        dialog = library.start_selected()
        assert dialog is not None and dialog.engine() == EngineId.LLAMA_CPP
        await wait_until(lambda: dialog.defaults_label.isVisible(), 20, "the filled-in values")
        ctx, slots = spin_value(dialog.ctx_size), spin_value(dialog.parallel)
        threads = spin_value(dialog.threads)
        assert ctx is not None and slots == 1, (ctx, slots)
        assert dialog.gpu_layers_choice.currentText() == "number"
        layers = dialog.gpu_layers_number.value()
        inventory = ui.bridge.inventory
        assert inventory is not None
        assert threads == (inventory.cpu.physical_cores or inventory.cpu.logical_cores)
        words = dialog.defaults_label.text()
        assert f"{ctx:,}-token context" in words and f"{threads} threads" in words, words
        await wait_until(lambda: dialog.fit_line.isVisible(), 20, "the fit line")
        if not inventory.gpus:
            # No GPU: the CPU is where it runs, and nothing says otherwise in orange.
            assert layers == 0 and "no GPU layers" in words
            assert dialog.fit_line.neutral and dialog.fit_line.styleSheet() == ""
        # Each stays editable: a change is the user's, and the next fill leaves it.
        dialog.threads.setValue(threads + 1)
        assert "threads" in dialog.params.user_fields
        # The words then say that field is not the machine's choice any more.
        said = dialog.defaults_label.text()
        assert said.startswith("Chosen for this machine:"), said
        assert "The threads shown are set here or by the preset instead." in said
        dialog.threads.setValue(threads)
        assert dialog.open_chat_check.isVisible() and dialog.open_chat_check.isChecked()

        seen: list[str] = []

        def ours() -> list[InstanceInfo]:
            """This test's engine (others may run on the machine: the daemon lists them)."""
            return [i for i in ui.bridge.instances or [] if i.model == model.path]

        def status() -> str:
            row = library.models.row_of(model.id)
            text = library.models.texts()[row]["Status"] if row is not None else ""
            if text and (not seen or seen[-1] != text):
                seen.append(text)
            return text

        ui.bridge.instances_changed.connect(lambda _: status())
        dialog.start_button.click()
        await wait_until(lambda: library.start_dialog is None, 20, "the dialog to close")
        assert status() in ("starting…", "loading…", "running"), seen
        cell = library.running.cells.get(model.id)
        assert isinstance(cell, RowActions)
        if status() != "running":
            assert not cell.chat_button.isEnabled(), "Chat waits until it serves"
        await wait_until(lambda: status() == "running", READY_S, "running")
        assert seen[0] in ("starting…", "loading…"), seen
        assert cell.chat_button.isEnabled() and cell.stop_button.text() == "Stop"
        # The message line follows the start to its end, not "Starting…" for ever.
        await wait_until(lambda: "is running" in library.message_label.text(), 10, "the words")

        # "Open the chat when it is ready": the Chat page, on this model.
        await wait_until(
            lambda: isinstance(ui.window.pages.currentWidget(), ChatPage), 10, "the chat"
        )
        chat = ui.window.pages.currentWidget()
        assert isinstance(chat, ChatPage)
        served = model.served_id or model.id
        assert chat.picker.current_model() == served
        # The name the gateway lists for the running engine: the chat goes to it, not to a
        # second start of the same file.
        await wait_until(lambda: served in chat.picker.models, 10, "the model listed")

        # What the engine reports is what the dialog showed.
        [info] = ours()
        assert info.status == InstanceStatus.READY
        assert chat.picker.models[served].instance == info.id
        props = _props(info)
        settings = props["default_generation_settings"]
        assert isinstance(settings, dict)
        assert settings["n_ctx"] == ctx // slots, (settings["n_ctx"], ctx)
        assert props["total_slots"] == slots
        assert _argv_value(info.argv, "-t") == str(threads)
        assert _argv_value(info.argv, "-ngl") == str(layers)

        # The row's Chat opens the chat on it again; Stop stops it.
        ui.window.show_page(ModelsPage.title)
        chat.new_chat()
        chat.picker.set_model("")
        cell.chat_button.click()
        assert ui.window.pages.currentWidget() is chat
        assert chat.picker.current_model() == (model.served_id or model.id)
        ui.window.show_page(ModelsPage.title)
        cell.stop_button.click()
        assert not cell.stop_button.isEnabled(), "one stop at a time"
        await wait_until(lambda: not ours(), 60, "the instance to stop")
        await wait_until(lambda: status() == "", 10, "the row to say nothing runs")
        assert model.id not in library.running.cells
        assert "stopped" in library.message_label.text()

    try:
        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, ui.bridge)


def _fit(verdict: FitVerdict, gpu_layers: int, *, gpu: bool, advice: int | None = None) -> ModelFit:
    def device(kind: DeviceKind) -> DeviceFit:
        return DeviceFit(
            label="GPU 0" if kind == DeviceKind.GPU else "RAM",
            kind=kind,
            weights_bytes=1,
            kv_bytes=1,
            compute_bytes=1,
            footprint_bytes=1,
            total_bytes=4,
            free_bytes=8,
            fits=True,
        )

    kinds = [DeviceKind.GPU, DeviceKind.CPU] if gpu else [DeviceKind.CPU]
    report = FitReport(
        verdict=verdict,
        engine=FitEngine.LLAMA_CPP,
        summary="In words.",
        context_length=8192,
        n_parallel=1,
        gpu_layers=gpu_layers,
        total_layers=33,
        devices=[device(kind) for kind in kinds],
        weights_bytes=1,
        kv_bytes=1,
        kv_bytes_per_token=1,
        compute_bytes=1,
        total_bytes=3,
        advice=[FitAdvice(kind=AdviceKind.MAX_CONTEXT, text="Less context.", value=advice)]
        if advice
        else [],
    )
    return ModelFit(target="tiny", report=report)


CPU = CpuInfo(brand="x", arch="x86_64", physical_cores=6, logical_cores=12, features=[])


def test_the_filled_in_values_say_where_they_come_from() -> None:
    on_cpu = start_values(_fit(FitVerdict.CPU_ONLY, 0, gpu=False), CPU)
    assert (on_cpu.ctx_size, on_cpu.parallel, on_cpu.gpu_layers, on_cpu.threads) == (
        8192,
        1,
        0,
        6,
    )
    assert "no GPU layers (this machine has no GPU" in on_cpu.words
    assert "6 threads (the CPU's cores)" in on_cpu.words
    on_gpu = start_values(_fit(FitVerdict.FULL_GPU, 33, gpu=True), CPU)
    assert on_gpu.gpu_layers == 33 and "all 33 layers on the GPU" in on_gpu.words
    split = start_values(_fit(FitVerdict.PARTIAL_OFFLOAD, 20, gpu=True), CPU)
    assert "20 of 33 layers on the GPU" in split.words
    # Too big at 8192 tokens: the largest context the estimate says fits.
    lowered = start_values(_fit(FitVerdict.DOES_NOT_FIT, 0, gpu=True, advice=2048), None)
    assert lowered.ctx_size == 2048 and "lowered from 8,192 to fit" in lowered.words
    assert lowered.threads is None and "threads" not in lowered.words
