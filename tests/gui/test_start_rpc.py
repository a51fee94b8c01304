"""The start dialog's RPC workers field: offered for llama.cpp only (among the advanced
fields), sent as the instance's `rpc`, and filled again from a preset."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from pytestqt.qtbot import QtBot

from roundhouse.api.engines import EngineId, InstanceOptions, LaunchStyle
from roundhouse.base.paths import resolve_home
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.dialogs.start_dialog import StartDialog

ALL_ENGINES = [spec for spec in load_catalog().engines if spec.launch != LaunchStyle.ATTACH]


@pytest.fixture
def bridge(qloop: qasync.QEventLoop, home_root: Path) -> Iterator[DaemonBridge]:
    made = DaemonBridge(resolve_home(home_root), auto_start=False)
    yield made
    qloop.run_until_complete(made.aclose())


def test_rpc_workers_are_offered_for_llama_cpp_and_sent(
    qtbot: QtBot, bridge: DaemonBridge, tmp_path: Path
) -> None:
    dialog = StartDialog(bridge, ALL_ENGINES, EngineId.LLAMA_CPP)
    qtbot.addWidget(dialog)
    gguf = tmp_path / "big.gguf"
    gguf.write_bytes(b"GGUF")
    dialog.model_edit.setText(str(gguf))
    assert dialog.field_visible("rpc")
    assert dialog.options().rpc == ()
    dialog.params.rpc.setText(" 192.168.1.20:50052, 192.168.1.21:50052 ,")
    assert dialog.options().rpc == ("192.168.1.20:50052", "192.168.1.21:50052")
    assert dialog.start_button.isEnabled()
    assert "no authentication" in dialog.params.rpc.toolTip()

    dialog.set_options(InstanceOptions(rpc=("10.0.0.5:6000",)))
    assert dialog.params.rpc.text() == "10.0.0.5:6000"
    assert dialog.options().rpc == ("10.0.0.5:6000",)

    dialog.engine_combo.setCurrentIndex(dialog.engine_combo.findData("vllm"))
    assert not dialog.field_visible("rpc")
    assert dialog.options().rpc == (), "hidden: never sent"
