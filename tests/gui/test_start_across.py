"""The start dialog's "Across paired machines" field: offered for vLLM only, and a start with
it goes to the daemon's start across machines, whose refusal (which machine, why) stays in
view. A real daemon that finds the vLLM stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import qasync
from pytestqt.qtbot import QtBot

from roundhouse.api.engines import EngineId, LaunchStyle
from roundhouse.base.paths import resolve_home
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.dialogs.start_dialog import StartDialog
from roundhouse.gui.pages.engines_page import EnginesPage
from tests.daemon_process import DaemonProcess, path_with, running_daemon
from tests.fakes.launchers import console_script
from tests.gui.conftest import wait_until
from tests.processes import assert_nothing_left
from tests.support.peers import pair, peer_daemon
from tests.support.recorded_daemon import recorded_machine
from tests.unit.engines.test_vllm_nodes import h100_box

ALL_ENGINES = [spec for spec in load_catalog().engines if spec.launch != LaunchStyle.ATTACH]
MODEL = "org/gui-across-big"


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


def test_started_across_from_the_engines_page_it_is_one_row_and_stops_every_node(
    ui: Ui, qloop: qasync.QEventLoop, home_root: Path, tmp_path: Path
) -> None:
    env = path_with(console_script(tmp_path / "bin", "vllm", "tests.fakes.openai_engines", "vllm"))

    def machine(root: Path, name: str) -> Any:
        _, argv, models = recorded_machine(tmp_path, name, h100_box(2), (MODEL,))
        argv[argv.index(str(tmp_path / name))] = str(root)
        return peer_daemon(root, name, env=env, argv=argv, models_dir=str(models))

    with machine(home_root, "head") as head, machine(tmp_path / "twin", "twin") as twin:
        pair(head, twin)

        async def scenario() -> None:
            page = ui.window.show_page("Engines")
            assert isinstance(page, EnginesPage)
            ui.bridge.start()
            await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
            await wait_until(lambda: bool(page.cards), 20, "the engines")
            dialog = page.open_start_dialog(EngineId.VLLM)
            assert dialog.across_edit.isVisible()
            dialog.model_edit.setText(MODEL)
            dialog.across_edit.setText("twin")
            assert dialog.start_button.isEnabled(), dialog.problems()
            dialog.start_button.click()
            await wait_until(lambda: page.start_dialog is None, 20, "the dialog to close")
            section = page.instances
            info = section.selected()
            assert info is not None and info.name == "vLLM across head, twin"

            def row() -> dict[str, str]:
                rows = [r for r, i in zip(section.row_texts(), _infos(section), strict=True)
                        if i.id == info.id]  # fmt: skip
                return rows[0] if rows else {}

            await wait_until(lambda: row().get("Status") == "ready", 30, "ready")
            assert row()["Engine"] == "vllm: vLLM across head, twin"
            pids = [p.pid for p in psutil.process_iter(["cmdline"])
                    if MODEL in (p.info["cmdline"] or [])]  # fmt: skip
            assert len(pids) == 2, "the head's node and the twin's"
            section.stop_button.click()
            await wait_until(lambda: not row(), 30, "the row to go")
            for pid in pids:
                assert_nothing_left(pid, pid, timeout_s=20)

        try:
            qloop.run_until_complete(scenario())
        finally:
            qloop.run_until_complete(ui.bridge.aclose())


def _infos(section: Any) -> list[Any]:
    return [section.model.instance(i) for i in range(section.model.rowCount())]


def test_across_with_ray_is_sent_and_refused_in_words_without_a_cluster(
    ui: Ui, qloop: qasync.QEventLoop, home_root: Path, tmp_path: Path
) -> None:
    """ "Use the Ray cluster I run" starts with Ray (the Ray stand-in beside vLLM finds no
    cluster), so the refusal, with each machine's `ray start` line, stays in view and nothing
    runs; the start with a cluster is tests/integration/test_vllm_ray_peers.py."""
    vllm = console_script(tmp_path / "bin", "vllm", "tests.fakes.openai_engines", "vllm")
    console_script(tmp_path / "bin", "ray", "tests.fakes.ray", None)
    env = {"PATH": f"{vllm.parent}:/usr/bin:/bin"}

    def machine(root: Path, name: str) -> Any:
        _, argv, models = recorded_machine(tmp_path, name, h100_box(2), (MODEL,))
        argv[argv.index(str(tmp_path / name))] = str(root)
        return peer_daemon(root, name, env=env, argv=argv, models_dir=str(models))

    with machine(home_root, "head") as head, machine(tmp_path / "twin", "twin") as twin:
        pair(head, twin)

        async def scenario() -> None:
            page = ui.window.show_page("Engines")
            assert isinstance(page, EnginesPage)
            ui.bridge.start()
            await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
            await wait_until(lambda: bool(page.cards), 20, "the engines")
            dialog = page.open_start_dialog(EngineId.VLLM)
            assert dialog.ray_check.isVisible() and not dialog.ray_check.isEnabled()
            dialog.model_edit.setText(MODEL)
            dialog.across_edit.setText("twin")
            assert dialog.ray_check.isEnabled()
            dialog.ray_check.setChecked(True)
            dialog.start_button.click()
            await wait_until(lambda: bool(dialog.error_text()), 60, "the refusal")
            said = " ".join(dialog.error_text().split())
            assert "No Ray cluster answers at" in said, said
            assert "on twin: ray start --address=" in said, said
            assert dialog.isVisible()
            assert [p for p in psutil.process_iter(["cmdline"])
                    if MODEL in (p.info["cmdline"] or [])] == []  # fmt: skip

        try:
            qloop.run_until_complete(scenario())
        finally:
            qloop.run_until_complete(ui.bridge.aclose())
