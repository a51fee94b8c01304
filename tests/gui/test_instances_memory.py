"""The instances table's memory tooltip: estimated against actual, with the breakdown."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from roundhouse.api.fit import FitOptions
from roundhouse.api.instance_memory import InstanceMemory
from roundhouse.core.knowledge.fit import estimate_fit
from roundhouse.core.knowledge.fit.actual import parse_llama_server_load
from roundhouse.core.knowledge.gguf import read_gguf_header, shape_from_gguf
from roundhouse.gui.widgets.instances_memory import RSS_TEXT, memory_summary
from roundhouse.gui.widgets.instances_model import Column, InstancesModel
from tests.fixtures.models.tiny_llama import write_tiny_llama_gguf
from tests.gui.test_instances_widgets import NOW, _info
from tests.unit.knowledge.test_fit_cases import cpu_only
from tests.unit.knowledge.test_memory_actual import CPU_TINY, CPU_TINY_NGL


def _memory(tmp_path: Path, lines: str, requested: int | None = None) -> InstanceMemory:
    shape = shape_from_gguf(read_gguf_header(write_tiny_llama_gguf(tmp_path / "t.gguf", seed=0)))
    estimate = estimate_fit(shape, cpu_only(), FitOptions(context_length=512))
    actual = parse_llama_server_load(lines.splitlines(), requested_layers=requested).use
    return InstanceMemory(actual=actual, estimate=estimate)


def test_memory_tooltip_sets_the_estimate_beside_the_engines_figures(
    qtbot: QtBot, tmp_path: Path
) -> None:
    model = InstancesModel(clock=lambda: NOW)
    model.set_instances([_info("a"), _info("b", memory=_memory(tmp_path, CPU_TINY))])
    plain = model.index(0, Column.MEMORY).data(Qt.ItemDataRole.ToolTipRole)
    assert plain == RSS_TEXT
    tip = model.index(1, Column.MEMORY).data(Qt.ItemDataRole.ToolTipRole)
    lines = tip.splitlines()
    # Buffers on both sides: weights + KV + compute (2.3 MiB estimated, 2.1 MiB logged).
    assert lines[0].startswith("Memory: estimated 2.3 MiB, actual 2.1 MiB")
    assert "  RAM: weights 440.2 KiB, KV 128.0 KiB, compute 1.8 MiB" in lines
    assert "  CPU: weights 440.3 KiB, KV 122.9 KiB, compute 1.5 MiB" in lines
    assert lines[-1] == f"{RSS_TEXT}: 1.5 GiB"
    # The column itself still shows the process tree's resident memory.
    assert model.text(model.instance(1), Column.MEMORY) == "1.5 GiB"


def test_memory_tooltip_carries_the_fallback_note(tmp_path: Path) -> None:
    info = _info("c", memory=_memory(tmp_path, CPU_TINY_NGL, requested=99))
    assert memory_summary(info) == "Memory: estimated 2.3 MiB, actual 2.1 MiB"
    model = InstancesModel(clock=lambda: NOW)
    model.set_instances([info])
    tip = model.index(0, Column.MEMORY).data(Qt.ItemDataRole.ToolTipRole)
    assert "put none there" in tip
    assert memory_summary(_info("d", memory=InstanceMemory(notes=["nothing"]))) is None
