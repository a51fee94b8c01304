"""The start dialog's "Split across machines" field for llama.cpp (ADR 40): offered for llama.cpp
only, its proposal per machine shown under the fit estimate, a name that is no paired machine
said in words, and a start with it split across a real paired daemon. Real daemons on
loopback with the real llama-server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import qasync
from pytestqt.qtbot import QtBot

from roundhouse.api.engines import EngineId, LaunchStyle
from roundhouse.base.paths import resolve_home
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.dialogs.start_dialog import StartDialog
from tests.daemon_process import DaemonProcess, path_with
from tests.gui.conftest import wait_until
from tests.support.peers import pair, peer_daemon

ALL_ENGINES = [spec for spec in load_catalog().engines if spec.launch != LaunchStyle.ATTACH]


def _instance(daemon: DaemonProcess, instance_id: str) -> dict[str, Any]:
    with daemon.control() as api:
        info: dict[str, Any] = api.get(f"/api/v1/instances/{instance_id}").json()
    return info


@pytest.fixture
def bridge(qloop: qasync.QEventLoop, home_root: Path) -> Iterator[DaemonBridge]:
    made = DaemonBridge(resolve_home(home_root), auto_start=False)
    yield made
    qloop.run_until_complete(made.aclose())


def test_split_across_a_paired_machine_from_the_start_dialog(
    qtbot: QtBot,
    qloop: qasync.QEventLoop,
    bridge: DaemonBridge,
    home_root: Path,
    tmp_path: Path,
    llama_server_binary: Path,
    tiny_gguf: Path,
) -> None:
    env = path_with(llama_server_binary)
    with (
        peer_daemon(home_root, "beta", env=env) as beta,
        peer_daemon(tmp_path / "alpha", "alpha", env=env) as alpha,
    ):
        pair(beta, alpha)
        dialog = StartDialog(bridge, ALL_ENGINES, EngineId.LLAMA_CPP)
        qtbot.addWidget(dialog)
        dialog.show()
        assert dialog.field_visible("across")
        dialog.model_edit.setText(str(tiny_gguf))
        dialog.params.across.setText(" gamma, ")
        assert dialog.options().across == ("gamma",)
        started: list[Any] = []
        dialog.started.connect(started.append)

        async def scenario() -> None:
            bridge.start()
            await wait_until(lambda: bridge.state == ConnectionState.CONNECTED, 20, "connected")
            await wait_until(
                lambda: "'gamma' is not a paired machine" in dialog.fit_line.text(), 30, "gamma"
            )
            dialog.params.across.setText("alpha")
            # The fit here, then the layers each machine would hold, and that one machine
            # that fits it is faster.
            await wait_until(
                lambda: (
                    "Split over" in dialog.fit_line.text() or "No split" in dialog.fit_line.text()
                ),
                60,
                "the split",
            )
            text = dialog.fit_line.text()
            assert "Split over 2 machines: this machine" in text, text
            assert "one machine is faster" in text or "not speed" in text, text
            assert dialog.start_button.isEnabled(), dialog.problems()
            dialog.start()
            await wait_until(lambda: bool(started), 30, "the start")

        qloop.run_until_complete(scenario())
        info = started[0]
        assert info.options.across == ("alpha",)
        deadline = time.monotonic() + 120
        while _instance(beta, info.id)["status"] not in ("ready", "failed"):
            assert time.monotonic() < deadline
            time.sleep(0.5)
        assert _instance(beta, info.id)["status"] == "ready", _instance(beta, info.id)
        with alpha.control() as api:
            assert len(api.get("/api/v1/rpc-servers").json()["rpc_servers"]) == 1
        with beta.control() as api:
            assert api.delete(f"/api/v1/instances/{info.id}").status_code == 200
        with alpha.control() as api:
            assert api.get("/api/v1/rpc-servers").json()["rpc_servers"] == []

        dialog.engine_combo.setCurrentIndex(dialog.engine_combo.findData("vllm"))
        assert not dialog.field_visible("across")
        assert dialog.options().across == (), "hidden: never sent"
