"""The instances table model, the start dialog's form and the stop confirmation, fed with
made-up instances (no daemon: the bridge stays disconnected)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QTableView
from pytestqt.qtbot import QtBot

from roundhouse.api.engines import EngineId, FlashAttention, InstanceOptions, LaunchStyle
from roundhouse.api.hardware import GpuInfo, GpuVendor
from roundhouse.api.instances import (
    ExitInfo,
    InstanceInfo,
    InstanceLogs,
    InstanceOrigin,
    InstanceStatus,
)
from roundhouse.base.paths import resolve_home
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.dialogs.log_dialog import MAX_LINES, LogDialog
from roundhouse.gui.dialogs.start_dialog import StartDialog
from roundhouse.gui.widgets.instances_model import (
    Column,
    InstancesModel,
    model_name,
    status_in_words,
)
from roundhouse.gui.widgets.instances_section import InstancesSection
from roundhouse.gui.widgets.start_engine_defaults import ollama_default_context
from tests.gui.conftest import wait_until

NOW = 1_800_000_000.0
ALL_ENGINES = [spec for spec in load_catalog().engines if spec.launch != LaunchStyle.ATTACH]


def _info(instance_id: str, **changes: object) -> InstanceInfo:
    values: dict[str, object] = {
        "id": instance_id,
        "engine": EngineId.LLAMA_CPP,
        "model": f"/models/{instance_id}.gguf",
        "origin": InstanceOrigin.STARTED,
        "status": InstanceStatus.READY,
        "host": "127.0.0.1",
        "port": 8000,
        "url": "http://127.0.0.1:8000",
        "base_url": "http://127.0.0.1:8000/v1",
        "started_at": NOW - 3725,
        "rss_bytes": 3 * 1024**3 // 2,
        "options": InstanceOptions(model=f"/models/{instance_id}.gguf"),
    }
    values.update(changes)
    return InstanceInfo.model_validate(values)


@pytest.fixture
def bridge(qloop: qasync.QEventLoop, home_root: Path) -> Iterator[DaemonBridge]:
    made = DaemonBridge(resolve_home(home_root), auto_start=False)
    yield made
    qloop.run_until_complete(made.aclose())


def test_rows_update_in_place_and_keep_the_selection(qtbot: QtBot) -> None:
    model = InstancesModel(clock=lambda: NOW)
    view = QTableView()
    qtbot.addWidget(view)
    view.setModel(model)
    view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
    resets: list[int] = []
    model.modelReset.connect(lambda: resets.append(1))

    model.set_instances([_info("a"), _info("b", status=InstanceStatus.LOADING, waited_s=4.2)])
    assert model.rowCount() == 2
    view.selectRow(1)
    with qtbot.waitSignal(model.dataChanged):
        model.set_instances([_info("a"), _info("b")])
    assert [i.row() for i in view.selectionModel().selectedRows()] == [1]
    model.set_instances([_info("b"), _info("c")])  # a goes, c comes
    assert [info.id for info in model.instances()] == ["b", "c"]
    assert [model.instance(i.row()).id for i in view.selectionModel().selectedRows()] == ["b"]
    assert resets == []

    texts = {column: model.text(model.instance(0), column) for column in Column}
    assert texts[Column.MODEL] == "b.gguf"
    assert texts[Column.STATUS] == "ready"
    assert texts[Column.UPTIME] == "1h 2m 5s"
    assert texts[Column.MEMORY] == "1.5 GiB"
    assert texts[Column.ORIGIN] == "started"
    tip = model.index(0, Column.MODEL).data(Qt.ItemDataRole.ToolTipRole)
    assert tip == "/models/b.gguf"


def test_status_and_model_in_words() -> None:
    assert status_in_words(_info("a", status=InstanceStatus.STARTING)) == "starting…"
    loading = _info("a", status=InstanceStatus.LOADING, waited_s=12.4)
    assert status_in_words(loading) == "loading the model… 12 s"
    failed = _info(
        "a",
        status=InstanceStatus.FAILED,
        error="The engine could not load the model.",
        last_exit=ExitInfo(kind="bad-model", message="it exited with code 1"),
    )
    assert status_in_words(failed) == "failed: The engine could not load the model."
    assert InstancesModel(clock=lambda: NOW).text(failed, Column.UPTIME) == "—"
    assert status_in_words(_info("a", restarts=2)) == "ready (restarted 2×)"
    assert model_name("/m/модели 模型/tiny.gguf") == "tiny.gguf"
    assert model_name(r"C:\models\tiny.gguf") == "tiny.gguf"
    assert model_name("mlx-community/Qwen3-0.6B-4bit") == "mlx-community/Qwen3-0.6B-4bit"
    assert model_name(None) == "—"


def test_the_form_offers_what_each_engine_takes(
    qtbot: QtBot, bridge: DaemonBridge, tmp_path: Path
) -> None:
    dialog = StartDialog(bridge, ALL_ENGINES, EngineId.VLLM)
    qtbot.addWidget(dialog)
    assert dialog.engine() == EngineId.VLLM
    assert dialog.ctx_size.specialValueText() == "the model's own (its config's context length)"
    for name in ("tensor_parallel", "pipeline_parallel", "gpu_memory_utilization"):
        assert dialog.field_visible(name), name
    for name in ("n_gpu_layers", "threads", "flash_attn", "n_cpu_moe", "memory_report"):
        assert not dialog.field_visible(name), name
    dialog.model_edit.setText("org/model")
    dialog.tensor_parallel.setValue(2)
    dialog.gpu_memory_utilization.setValue(0.85)
    dialog.threads.setValue(8)  # hidden for vLLM: not sent
    options = dialog.options()
    assert options.tensor_parallel == 2 and options.gpu_memory_utilization == 0.85
    assert options.threads is None and options.model == "org/model"
    assert dialog.request().port is None
    dialog.cache_type_k.setCurrentText("fp8")
    dialog.cache_type_v.setCurrentText("auto")
    assert "same type for K and V" in dialog.problem_label.text()
    assert not dialog.start_button.isEnabled()
    dialog.cache_type_v.setCurrentText("fp8")
    dialog.extra_args.setText('--seed "1')
    assert "Extra arguments" in dialog.problem_label.text()
    dialog.extra_args.setText("--seed 1 --enforce-eager")
    assert dialog.start_button.isEnabled()
    assert dialog.options().extra_args == ("--seed", "1", "--enforce-eager")
    # Remote code is an option of its own, off unless the user turns it on.
    assert dialog.field_visible("trust_remote_code") and not dialog.options().trust_remote_code
    dialog.trust_remote_code.setChecked(True)
    assert dialog.options().trust_remote_code

    dialog.engine_combo.setCurrentIndex(dialog.engine_combo.findData("mlx"))
    assert dialog.field_visible("draft_model") and dialog.field_visible("num_draft_tokens")
    assert not dialog.field_visible("ctx_size")
    assert not dialog.field_visible("trust_remote_code")
    assert not dialog.options().trust_remote_code, "hidden: never sent"
    dialog.num_draft_tokens.setValue(3)
    assert "needs a draft model" in dialog.problem_label.text()

    dialog.engine_combo.setCurrentIndex(dialog.engine_combo.findData("ollama"))
    # An empty field says what Ollama does with it here, not "engine default".
    ollama_ctx = ollama_default_context(bridge.inventory.gpus if bridge.inventory else [])
    assert dialog.ctx_size.specialValueText().startswith(f"Ollama's: up to {ollama_ctx:,}")
    assert dialog.parallel.specialValueText() == "Ollama's: 1 at a time"
    dialog.model_edit.clear()
    assert dialog.start_button.isEnabled(), "Ollama serves every pulled model: none needed"
    assert not dialog.browse_button.isVisible()
    assert not dialog.advanced_button.isVisible()

    dialog.engine_combo.setCurrentIndex(dialog.engine_combo.findData("llama.cpp"))
    assert dialog.field_visible("memory_report") and not dialog.options().memory_report
    dialog.memory_report.setChecked(True)
    assert dialog.options().memory_report
    dialog.model_edit.setText(str(tmp_path / "model.safetensors"))
    assert "GGUF" in dialog.problem_label.text()
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    dialog.model_edit.setText(str(gguf))
    dialog.gpu_layers_choice.setCurrentIndex(dialog.gpu_layers_choice.findText("number"))
    dialog.gpu_layers_number.setValue(20)
    dialog.flash_attn.setCurrentIndex(dialog.flash_attn.findText("on"))
    dialog.port.setValue(8123)
    options = dialog.options()
    assert options.n_gpu_layers == 20 and options.flash_attn == FlashAttention.ON
    assert dialog.request().port == 8123

    saved = InstanceOptions(ctx_size=2048, n_gpu_layers="all", threads=4, cache_type_k="q8_0")
    dialog.set_options(saved)
    again = dialog.options()
    assert (again.ctx_size, again.n_gpu_layers, again.threads) == (2048, "all", 4)
    assert again.cache_type_k == "q8_0" and again.flash_attn is None


def test_without_a_daemon_a_start_says_so_in_the_dialog(
    qtbot: QtBot, qloop: qasync.QEventLoop, bridge: DaemonBridge, tmp_path: Path
) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    dialog = StartDialog(bridge, ALL_ENGINES)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.model_edit.setText(str(gguf))
    dialog.start_button.click()
    assert not dialog.start_button.isEnabled()
    qloop.run_until_complete(wait_until(lambda: bool(dialog.error_text()), 5, "the answer"))
    assert dialog.error_text().startswith("Not connected to the daemon")
    assert dialog.isVisible() and dialog.start_button.isEnabled()


def test_stopping_an_external_engine_asks_first_an_adopted_one_does_not(
    qtbot: QtBot, qloop: qasync.QEventLoop, bridge: DaemonBridge
) -> None:
    section = InstancesSection(bridge)
    qtbot.addWidget(section)
    section.model.set_instances(
        [
            _info("ext", origin=InstanceOrigin.EXTERNAL, options=None),
            _info("old", origin=InstanceOrigin.ADOPTED, options=None),
        ]
    )
    section.select_instance("ext")
    assert not section.restart_button.isEnabled(), "unknown options: no restart"
    section.stop_selected()
    box = section.confirm_box
    assert box is not None and "Stop llama.cpp on port 8000?" in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert section.confirm_box is None
    assert "Stopping" not in section.message_label.text()

    section.select_instance("old")
    section.stop_selected()
    assert section.confirm_box is None
    assert section.message_label.text().startswith("Stopping llama.cpp (old.gguf)")

    async def answered() -> None:
        await wait_until(lambda: "Not connected" in section.message_label.text(), 5, "why not")
        await asyncio.sleep(0)

    qloop.run_until_complete(answered())
    assert section.model.rowCount() == 2


def test_failed_rows_offer_dismiss(qtbot: QtBot, bridge: DaemonBridge) -> None:
    section = InstancesSection(bridge)
    qtbot.addWidget(section)
    section.model.set_instances([_info("a")])
    section.select_instance("a")
    assert section.stop_button.text() == "Stop"
    section.model.set_instances([_info("a", status=InstanceStatus.FAILED, error="it ended")])
    assert section.selected() is not None
    assert section.stop_button.text() == "Dismiss"
    assert not section.copy_button.isEnabled()


def test_the_log_view_follows_the_end_but_not_a_reader_who_scrolled_up(
    qtbot: QtBot, qloop: qasync.QEventLoop, bridge: DaemonBridge
) -> None:
    dialog = LogDialog(bridge, _info("a"))
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.append([f"line {n}" for n in range(300)])
    assert dialog.at_end()
    dialog.append(["line 300"])
    assert dialog.at_end(), "at the end: it follows"
    bar = dialog.view.verticalScrollBar()
    bar.setValue(100)
    dialog.append([f"more {n}" for n in range(50)])
    assert bar.value() == 100 and not dialog.at_end(), "scrolled up: it stays"
    dialog.scroll_to_end()
    assert dialog.at_end()
    # The block limit drops the oldest lines; the view keeps the newest MAX_LINES.
    dialog.append([f"flood {n}" for n in range(MAX_LINES)])
    assert len(dialog.lines()) == MAX_LINES and dialog.lines()[-1] == f"flood {MAX_LINES - 1}"

    # Without a daemon the follow request fails: said once, asked again later.
    qloop.run_until_complete(wait_until(dialog.note.isVisible, 5, "the note"))
    assert "Not connected" in dialog.note.text()
    dialog.close()


def test_the_log_view_reads_a_restarted_engine_from_its_first_line(
    qtbot: QtBot, bridge: DaemonBridge
) -> None:
    dialog = LogDialog(bridge, _info("a"))
    qtbot.addWidget(dialog)

    def answer(generation: int, lines: list[str], next_: int) -> None:
        logs = InstanceLogs(id="a", lines=lines, next=next_, generation=generation)
        dialog._on_logs_succeeded(logs)

    answer(1, ["one", "two", "three"], 3)
    assert dialog.lines() == ["one", "two", "three"] and dialog._since == 3
    # The engine restarted: lines after 3 of the new process would skip its first three.
    answer(2, ["new four"], 4)
    assert dialog.restarts_seen == 1 and dialog._since == 0
    assert "engine restarted" in dialog.lines()[-1]
    answer(2, ["new one", "new two"], 2)
    assert dialog.lines()[-2:] == ["new one", "new two"] and dialog._since == 2
    answer(2, [], 2)
    assert dialog.restarts_seen == 1, "the same generation is no restart"


@pytest.mark.parametrize(
    ("vram_gib", "context"), [(0, 4_096), (16, 4_096), (24, 32_768), (2 * 24, 262_144)]
)
def test_ollamas_default_context_follows_its_vram_tiers(vram_gib: int, context: int) -> None:
    gpus = (
        [
            GpuInfo(
                index=0,
                vendor=GpuVendor.NVIDIA,
                name="g",
                source="nvml",
                memory_total_bytes=vram_gib << 30,
            )
        ]
        if vram_gib
        else []
    )
    assert ollama_default_context(gpus) == context
