"""exo on the Engines page, against a real daemon and the exo stand-in: attached by URL in the
dialog (listed as exo with only its placed model), found by Scan, and a stop of the exo it
found refused in words without asking first."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync

from roundhouse.api.engines import EngineId
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.engines_page import EnginesPage
from roundhouse.gui.widgets.instances_section import InstancesSection
from tests.daemon_process import DaemonProcess, running_daemon
from tests.fakes.exo import ExoStandin, start_exo
from tests.gui.conftest import wait_until
from tests.processes import alive, free_port

PLACED = "mlx-community/Llama-3.2-1B-Instruct-4bit"


@pytest.fixture
def exo_daemon(home_root: Path) -> Iterator[DaemonProcess]:
    env = {
        "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    with running_daemon(home_root, env=env) as process:
        yield process


@pytest.fixture
def exo(tmp_path: Path) -> Iterator[ExoStandin]:
    standin = start_exo(tmp_path / "exo", free_port(), "--standin-place", PLACED)
    try:
        yield standin
    finally:
        standin.stop()


def _row(section: InstancesSection, port: int) -> dict[str, str] | None:
    return next((r for r in section.row_texts() if r["Port"] == str(port)), None)


def test_exo_attached_found_and_not_stopped(
    ui: Ui, qloop: qasync.QEventLoop, exo_daemon: DaemonProcess, exo: ExoStandin, tmp_path: Path
) -> None:
    scanned: list[ExoStandin] = []

    async def scenario() -> None:
        page = ui.window.show_page("Engines")
        assert isinstance(page, EnginesPage)
        section = page.instances
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        await wait_until(lambda: ui.bridge.instances is not None, 10, "the instances")

        dialog = section.open_attach_dialog()
        dialog.url_edit.setText(exo.base_url)
        dialog.name_edit.setText("Studio")
        dialog.attach_button.click()
        await wait_until(lambda: section.attach_dialog is None, 15, "the dialog to close")
        row = _row(section, exo.port)
        assert row is not None
        # Only the placed model: exo's card list names others it does not serve.
        assert row["Engine"] == "exo: Studio" and row["Model"] == PLACED
        assert section.stop_button.text() == "Detach"

        # A second exo, found by Scan: stopping it is refused in words, without asking.
        other = start_exo(tmp_path / "scanned", free_port(), "--standin-place", PLACED)
        scanned.append(other)
        section.scan_button.click()
        await wait_until(lambda: _row(section, other.port) is not None, 30, "the scan")
        found = next(i for i in section.model.instances() if i.port == other.port)
        assert found.engine == EngineId.EXO
        assert section.select_instance(found.id)
        section.stop_button.click()
        assert section.confirm_box is None
        await wait_until(
            lambda: "does not stop it" in section.message_label.text(), 15, "the refusal"
        )
        assert "Traceback" not in section.message_label.text()
        assert alive(other.proc.pid) and _row(section, other.port) is not None

    try:
        qloop.run_until_complete(scenario())
    finally:
        for standin in scanned:
            standin.stop()
        qloop.run_until_complete(ui.bridge.aclose())
