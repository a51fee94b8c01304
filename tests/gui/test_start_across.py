"""The start dialog's "Across paired machines" field: offered for vLLM only, and a start with
it goes to the daemon's start across machines, whose refusal (which machine, why) stays in
view. A real daemon that finds the vLLM stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from pytestqt.qtbot import QtBot

from roundhouse.api.engines import EngineId, LaunchStyle
from roundhouse.base.paths import resolve_home
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.dialogs.start_dialog import StartDialog
from tests.daemon_process import DaemonProcess, path_with, running_daemon
from tests.fakes.launchers import console_script
from tests.gui.conftest import wait_until

ALL_ENGINES = [spec for spec in load_catalog().engines if spec.launch != LaunchStyle.ATTACH]


@pytest.fixture
def daemon(home_root: Path, tmp_path: Path) -> Iterator[DaemonProcess]:
    vllm = console_script(tmp_path / "bin", "vllm", "tests.fakes.openai_engines", "vllm")
    with running_daemon(home_root, env=path_with(vllm)) as proc:
        yield proc


@pytest.fixture
def bridge(qloop: qasync.QEventLoop, home_root: Path) -> Iterator[DaemonBridge]:
    made = DaemonBridge(resolve_home(home_root), auto_start=False)
    yield made
    qloop.run_until_complete(made.aclose())


def test_across_is_offered_for_vllm_only_and_its_refusal_is_shown(
    qtbot: QtBot, qloop: qasync.QEventLoop, daemon: DaemonProcess, bridge: DaemonBridge
) -> None:
    dialog = StartDialog(bridge, ALL_ENGINES, EngineId.VLLM)
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.across_edit.isVisible()
    dialog.across_edit.setText(" gpu-b, ,nobody ")
    assert dialog.across() == ["gpu-b", "nobody"]
    dialog.engine_combo.setCurrentIndex(dialog.engine_combo.findData("llama.cpp"))
    assert not dialog.across_edit.isVisible()
    assert dialog.across() == [], "hidden: never sent"
    dialog.engine_combo.setCurrentIndex(dialog.engine_combo.findData("vllm"))
    dialog.model_edit.setText("org/big")
    dialog.across_edit.setText("nobody")

    async def scenario() -> None:
        bridge.start()
        await wait_until(lambda: bridge.state == ConnectionState.CONNECTED, 20, "connected")
        assert dialog.start_button.isEnabled(), dialog.problems()
        dialog.start()
        await wait_until(lambda: bool(dialog.error_text()), 20, "the refusal")

    qloop.run_until_complete(scenario())
    assert "No paired machine is called 'nobody'" in dialog.error_text()
    assert dialog.isVisible()
